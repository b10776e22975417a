"""Every portal form carries its session's CSRF token, and every portal page the security
headers; no GET changes anything."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import LedgerEntry, StaffMember
from testbed.cards import make_customer
from tests.portal.helpers import add_staff, csrf_token, sign_in


@pytest.fixture
def owner(app, tenant):
    return add_staff(app, tenant.company_id, "owner@example.com", "owner")


def _adjustment(client, customer_id, **token):
    return client.post(f"/portal/customers/{customer_id}/adjustments",
                       data={"amount": "10.00", "basis": "goodwill", **token})


def test_a_form_without_the_token_is_400_and_changes_nothing(client, owner, tenant, db):
    customer = make_customer(db, tenant.company_id)
    sign_in(client, "owner@example.com")
    answer = _adjustment(client, customer.id)
    assert answer.status_code == 400
    assert "text/html" in answer.content_type
    assert db.scalars(select(LedgerEntry).where(LedgerEntry.customer_id == customer.id)).all() == []


def test_another_sessions_token_is_400(app, client, owner, tenant, db):
    customer = make_customer(db, tenant.company_id)
    other = app.test_client()
    foreign = csrf_token(other.get("/portal/login"))
    sign_in(client, "owner@example.com")
    assert _adjustment(client, customer.id, csrf_token=foreign).status_code == 400
    answer = client.post(f"/portal/customers/{customer.id}/adjustments",
                         data={"amount": "10.00", "basis": "goodwill"},
                         headers={"X-CSRFToken": csrf_token(client.get("/portal/"))})
    assert answer.status_code == 303  # the header carries it as well as the field
    assert len(db.scalars(select(LedgerEntry).where(LedgerEntry.customer_id == customer.id)).all()) == 1


def test_signing_out_without_the_token_keeps_the_session(client, owner):
    sign_in(client, "owner@example.com")
    assert client.post("/portal/logout").status_code == 400
    assert client.get("/portal/").status_code == 200


def test_a_role_change_without_the_token_changes_nothing(app, client, owner, tenant, db):
    member = add_staff(app, tenant.company_id, "desk@example.com", "support")
    sign_in(client, "owner@example.com")
    assert client.post(f"/portal/staff/{member}/role", data={"role": "owner"}).status_code == 400
    assert db.get(StaffMember, (tenant.company_id, member)).role == "support"


@pytest.mark.parametrize("path", ["/portal/login", "/portal/", "/portal/customers",
                                  "/portal/static/portal.css", "/portal/nothing-here"])
def test_every_portal_answer_has_the_security_headers(client, owner, path):
    sign_in(client, "owner@example.com")
    headers = client.get(path).headers
    policy = headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "script-src 'self'" in policy and "unsafe" not in policy
    assert headers["Cache-Control"] == "no-store"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"


def test_the_api_sets_no_portal_cookie(client, tenant):
    answer = client.get("/v1/company", headers=tenant.headers())
    assert answer.status_code == 200 and "Set-Cookie" not in answer.headers
    assert "Content-Security-Policy" not in answer.headers


def test_pages_refer_to_no_other_site(client, owner):
    sign_in(client, "owner@example.com")
    for path in ("/portal/login", "/portal/", "/portal/customers", "/portal/staff"):
        html = client.get(path).get_data(as_text=True)
        assert "http://" not in html.replace("http://127.0.0.1:8000/", "") and "https://" not in html
        assert "<script" not in html and "style=" not in html
