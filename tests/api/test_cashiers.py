"""The cashier catalog: safe data only, filled by the registers, listed by page and name."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.database.engine import utcnow
from app.models import Cashier
from app.services.locations import stores
from tests.api.locations_helpers import validation_locs
from tests.concurrency import run_together


def _announce(app, tenant, *cashiers: tuple[str, str]) -> list[str]:
    """Cashiers as checkout-session creation announces them; their ids."""
    session = app.extensions["session_factory"]()
    try:
        ids = [stores.upsert_cashier(session, tenant.company_id, external_id, name, utcnow()).id
               for external_id, name in cashiers]
        session.commit()
        return ids
    finally:
        session.close()


def _listing(client, tenant, **query) -> dict:
    response = client.get("/v1/cashiers", headers=tenant.headers(), query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_the_catalog_holds_only_safe_columns():
    assert {c.name for c in Cashier.__table__.columns} == {
        "company_id", "id", "external_id", "name", "created_at"}


def test_upsert_creates_once_and_renames(app, client, tenant):
    first, = _announce(app, tenant, ("c-1", "Anna"))
    again, renamed = _announce(app, tenant, ("c-1", "Anna"), ("c-1", "Anna Petrova"))
    assert first == again == renamed

    listed = _listing(client, tenant)
    assert listed["total"] == 1
    cashier = listed["items"][0]
    assert cashier == {"id": first, "externalId": "c-1", "name": "Anna Petrova",
                       "createdAt": cashier["createdAt"]}
    assert cashier["createdAt"].endswith("Z")


def test_cashiers_are_listed_by_name_and_page(app, client, tenant, other_tenant):
    _announce(app, tenant, ("3", "Carl"), ("1", "Alice"), ("2", "Bob"), ("4", "Dora"))
    _announce(app, other_tenant, ("1", "Alien"))

    first = _listing(client, tenant, pageSize=3)
    assert [c["name"] for c in first["items"]] == ["Alice", "Bob", "Carl"]
    assert (first["page"], first["pageSize"], first["total"]) == (1, 3, 4)
    assert [c["name"] for c in _listing(client, tenant, page=2, pageSize=3)["items"]] == ["Dora"]
    beyond = _listing(client, tenant, page=3, pageSize=3)
    assert beyond["items"] == [] and beyond["total"] == 4


def test_query_matches_part_of_the_name_in_any_case(app, client, tenant, other_tenant):
    _announce(app, tenant, ("1", "Иванова Мария"), ("2", "Petrov IVAN"), ("3", "Sidorov"),
              ("4", "100% Anna"), ("5", "Anna_B"))
    _announce(app, other_tenant, ("1", "Ivanov"))

    def names(query):
        return sorted(c["name"] for c in _listing(client, tenant, query=query)["items"])

    assert names("ivan") == ["Petrov IVAN"]
    assert names("ИВАН") == ["Иванова Мария"]
    assert names("мари") == ["Иванова Мария"]
    assert names("%") == ["100% Anna"]
    assert names("a_b") == ["Anna_B"]
    assert names("nobody") == []
    assert _listing(client, tenant, query="ov")["total"] == 2
    assert _listing(client, tenant, query="")["total"] == 5
    assert _listing(client, tenant, query="x" * 100)["total"] == 0


@pytest.mark.parametrize("query, loc", [
    ({"query": "x" * 101}, ["query", "query"]),
    ({"page": 0}, ["query", "page"]),
    ({"pageSize": 201}, ["query", "pageSize"]),
    ({"pageSize": 0}, ["query", "pageSize"]),
])
def test_cashier_query_bounds(client, tenant, query, loc):
    response = client.get("/v1/cashiers", headers=tenant.headers(), query_string=query)
    assert validation_locs(response) == [loc]


def test_cashiers_need_the_read_scope(client, tenant):
    key = tenant.key_with("locations:write")
    response = client.get("/v1/cashiers", headers=tenant.headers(key=key))
    assert response.status_code == 403 and response.get_json()["code"] == "insufficient_scope"


@pytest.mark.postgres
def test_registers_announcing_one_new_cashier_at_once_make_one_entry(app, tenant, db):
    def announce():
        session = app.extensions["session_factory"]()
        try:
            cashier = stores.upsert_cashier(session, tenant.company_id, "c-7", "Olga", utcnow())
            session.commit()
            return cashier.id
        finally:
            session.close()

    ids = run_together([announce] * 8)

    assert all(isinstance(i, str) for i in ids), ids
    assert len(set(ids)) == 1
    assert db.scalar(select(func.count()).select_from(Cashier)) == 1


def test_a_register_adds_its_cashier_and_cannot_hand_over_secrets(client, tenant):
    customer = client.post("/v1/customers", headers=tenant.headers(),
                           json={"phone": "+79123456789", "firstName": "Ivan"})
    assert customer.status_code == 201, customer.get_json()

    def open_session(receipt, cashier):
        return client.post("/v1/checkout-sessions", headers=tenant.headers(Idempotency_Key=receipt * 8),
                           json={"externalReceiptId": receipt, "customerId": customer.get_json()["id"],
                                 "cashier": cashier})

    for secret in ("pin", "phone", "taxNumber", "inn"):
        refused = open_session(f"r-{secret}", {"externalId": "c-1", "name": "Olga", secret: "1234"})
        assert validation_locs(refused) == [["body", "cashier", secret]]
    assert _listing(client, tenant)["total"] == 0

    assert open_session("r-ok", {"externalId": "c-1", "name": "Olga"}).status_code == 201
    listed = _listing(client, tenant)["items"]
    assert [(c["externalId"], c["name"]) for c in listed] == [("c-1", "Olga")]
    assert set(listed[0]) == {"id", "externalId", "name", "createdAt"}
