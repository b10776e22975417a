"""Customers in the portal (search, profile, adjustment through the API's own service), the
roles' table on every page and action, and tenancy: another company's customer is a 404."""
from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import AuditEvent, LedgerEntry, RewardLot
from app.services.staff.roles import MAY, ROLES
from testbed.cards import make_customer
from tests.api.test_customers import enrol
from tests.portal.helpers import add_staff, post_form, sign_in

PAGES = {"dashboard": "/portal/", "reports": "/portal/reports/liability",
         "program": "/portal/program", "locations": "/portal/locations", "keys": "/portal/keys",
         "webhooks": "/portal/webhooks", "customers": "/portal/customers",
         "staff": "/portal/staff", "audit": "/portal/audit"}


@pytest.fixture
def signed_in(app, tenant):
    """A client signed in as a new member of the tenant with the given role."""
    def as_role(role: str, client=None):
        client = client or app.test_client()
        add_staff(app, tenant.company_id, f"{role}@example.com", role, name=f"{role.title()} One")
        assert sign_in(client, f"{role}@example.com").status_code == 303
        return client
    return as_role


@pytest.mark.parametrize("role", ROLES)
def test_each_page_answers_as_the_roles_table_says(signed_in, role):
    client = signed_in(role)
    for action, path in PAGES.items():
        answer = client.get(path)
        expected = 200 if role in MAY[action] else 403
        assert answer.status_code == expected, (role, path)
        if expected == 403:
            assert "text/html" in answer.content_type


def test_the_menu_shows_only_what_the_role_may_open(signed_in):
    html = signed_in("support").get("/portal/").get_data(as_text=True)
    assert 'href="/portal/customers"' in html
    assert 'href="/portal/staff"' not in html and 'href="/portal/audit"' not in html


def _adjust(client, customer_id, amount, basis="goodwill", **more):
    return post_form(client, f"/portal/customers/{customer_id}",
                     f"/portal/customers/{customer_id}/adjustments",
                     {"amount": amount, "basis": basis, **more})


def _entries(db, customer_id):
    db.expire_all()
    return db.scalars(select(LedgerEntry).where(LedgerEntry.customer_id == customer_id,
                                                LedgerEntry.basis != "opening balance")).all()


def test_an_accountant_may_not_adjust(signed_in, tenant, db):
    customer = make_customer(db, tenant.company_id)
    client = signed_in("accountant")
    html = client.get(f"/portal/customers/{customer.id}").get_data(as_text=True)
    assert "/adjustments" not in html
    assert _adjust(client, customer.id, "1.00").status_code == 403
    assert _entries(db, customer.id) == []


def test_support_adjusts_up_to_the_limit_each_way(signed_in, tenant, db):
    customer = make_customer(db, tenant.company_id, available=100_000)
    client = signed_in("support")
    assert _adjust(client, customer.id, "500.01").status_code == 403
    assert _adjust(client, customer.id, "-500.01").status_code == 403
    assert _entries(db, customer.id) == []
    assert _adjust(client, customer.id, "500.00").status_code == 303
    assert _adjust(client, customer.id, "-500,00", basis="taken back").status_code == 303
    assert sorted(entry.amount for entry in _entries(db, customer.id)) == [-50_000, 50_000]


def test_a_manager_adjusts_and_the_ledger_names_them(signed_in, client, tenant, db):
    customer = enrol(client, tenant)
    manager = signed_in("manager")
    answer = _adjust(manager, customer["id"], "1 234,56", basis="complaint #7")
    assert answer.status_code == 303
    assert answer.headers["Location"] == f"/portal/customers/{customer['id']}"
    [entry] = _entries(db, customer["id"])
    assert (entry.type, entry.amount, entry.basis) == ("ADJUSTMENT", 123_456, "complaint #7")
    profile = manager.get(answer.headers["Location"]).get_data(as_text=True)
    assert "1\xa0234,56\xa0₽" in profile and "Manager One" in profile
    activity = client.get(f"/v1/customers/{customer['id']}/reward-activities",
                          headers=tenant.headers()).get_json()["items"]
    assert activity[0]["author"] == {"kind": "STAFF", "name": "Manager One"}
    event = db.scalar(select(AuditEvent).where(AuditEvent.action == "reward.adjusted"))
    assert (event.actor_kind, event.actor_name, event.target_type, event.target_id) == (
        "STAFF", "Manager One", "ledger_entry", entry.id)


def test_the_adjustment_keeps_the_apis_rules(signed_in, tenant, db):
    customer = make_customer(db, tenant.company_id, available=1_000)
    client = signed_in("owner")
    too_much = _adjust(client, customer.id, "-10.01")
    assert too_much.status_code == 409  # never below the available balance
    assert _adjust(client, customer.id, "0").status_code == 422
    assert _adjust(client, customer.id, "abc").status_code == 422
    assert _adjust(client, customer.id, "5.00", basis="").status_code == 422
    debit_expiring = _adjust(client, customer.id, "-1.00", expiresAt="2099-01-01T10:00")
    assert debit_expiring.status_code == 422
    assert _entries(db, customer.id) == []
    next_year = f"{utcnow().year + 1}-06-01T10:00"
    assert _adjust(client, customer.id, "5.00", expiresAt=next_year).status_code == 303
    [promotion] = _entries(db, customer.id)
    lot = db.get(RewardLot, (tenant.company_id, promotion.id))
    assert lot.expires_at == datetime.fromisoformat(next_year + "+03:00")  # typed in Moscow


def test_search_finds_by_any_phone_spelling_card_number_and_name(signed_in, client, tenant, db):
    customer = enrol(client, tenant, phone="+79123456789", first_name="Зинаида",
                     lastName="Петрова")
    make_customer(db, tenant.company_id, first_name="Other")
    portal = signed_in("support")
    for query in ("8 (912) 345-67-89", "+7 912 345 67 89", "9123456789",
                  customer["cardNumber"], "зинаида", "Петров", "345-67"):
        html = portal.get("/portal/customers", query_string={"q": query}).get_data(as_text=True)
        assert f'/portal/customers/{customer["id"]}' in html, query
        assert "Other" not in html, query


def test_another_companys_customer_is_a_404_page(signed_in, tenant, other_tenant, db):
    stranger = make_customer(db, other_tenant.company_id, available=10_000)
    client = signed_in("owner")
    assert client.get(f"/portal/customers/{stranger.id}").status_code == 404
    assert client.get("/portal/customers/no-such-id").status_code == 404
    answer = _adjust(client, stranger.id, "-1.00")
    assert answer.status_code == 404 and _entries(db, stranger.id) == []
    html = client.get("/portal/customers", query_string={"q": stranger.card_number})
    assert stranger.id not in html.get_data(as_text=True)


def test_the_profile_shows_balances_tier_expiring_points_activity_and_card_link(signed_in, tenant, db):
    customer = make_customer(db, tenant.company_id, available=12_345, pending=500)
    html = signed_in("accountant").get(f"/portal/customers/{customer.id}").get_data(as_text=True)
    assert "123,45\xa0₽" in html and "5,00\xa0₽" in html
    assert f"/cards/{customer.card_token}" in html
    assert "opening balance" in html
