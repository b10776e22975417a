"""The audit record: changes through the API, the portal and the operator's commands, read at
GET /v1/audit-events and on the owner's /portal/audit."""
from __future__ import annotations

from datetime import timedelta

from app.database.engine import utcnow
from app.services.audit import events as audit
from app.wire import format_timestamp
from tests.api.test_customers import credit, enrol
from tests.portal.helpers import add_staff, sign_in


def _events(client, tenant, **query):
    answer = client.get("/v1/audit-events", query_string=query, headers=tenant.headers())
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def test_an_api_adjustment_names_the_key_and_the_address(client, tenant):
    customer = enrol(client, tenant)
    entry = credit(client, tenant, customer["id"], "10.00")
    [event] = _events(client, tenant)["items"]
    assert event["action"] == "reward.adjusted"
    assert event["actor"]["kind"] == "CREDENTIAL" and event["actor"]["name"] == "all scopes"
    assert event["target"] == {"type": "ledger_entry", "id": entry["id"]}
    assert event["address"] == "127.0.0.1" and event["at"].endswith("Z")
    activity = client.get(f"/v1/customers/{customer['id']}/reward-activities",
                          headers=tenant.headers()).get_json()["items"]
    assert activity[0]["author"] == {"kind": "CREDENTIAL", "name": "all scopes"}


def test_the_address_behind_a_trusted_proxy_is_the_clients(client, tenant):
    customer = enrol(client, tenant)
    client.post(f"/v1/customers/{customer['id']}/reward-adjustments",
                json={"amount": "1.00", "basis": "x"},
                headers=tenant.headers(Idempotency_Key="proxied-1",
                                       X_Forwarded_For="203.0.113.9"))
    assert _events(client, tenant)["items"][0]["address"] == "203.0.113.9"


def test_activity_the_service_made_itself_has_no_author(client, tenant):
    customer = enrol(client, tenant)
    items = client.get(f"/v1/customers/{customer['id']}/reward-activities",
                       headers=tenant.headers()).get_json()["items"]
    assert all(item.get("author") is None for item in items)


def test_the_record_is_newest_first_paged_and_filtered(app, client, tenant):
    add_staff(app, tenant.company_id, "owner@example.com", "owner", name="Olga")
    sign_in(app.test_client(), "owner@example.com")
    customer = enrol(client, tenant)
    credit(client, tenant, customer["id"], "1.00")
    everything = _events(client, tenant)
    assert [e["action"] for e in everything["items"]] == [
        "reward.adjusted", "staff.signed_in", "staff.added"]
    assert everything["total"] == 3
    assert _events(client, tenant, offset=1, limit=1)["items"][0]["action"] == "staff.signed_in"
    operator = _events(client, tenant, actorKind="OPERATOR")["items"]
    assert [(e["action"], e["actor"]["kind"]) for e in operator] == [("staff.added", "OPERATOR")]
    assert _events(client, tenant, action="staff.signed_in")["items"][0]["actor"]["name"] == "Olga"
    later = format_timestamp(utcnow() + timedelta(minutes=1))
    assert _events(client, tenant, **{"from": later})["total"] == 0
    assert _events(client, tenant, to=later)["total"] == 3


def test_a_key_without_audit_read_is_refused_and_bad_filters_are_422(client, tenant):
    key = tenant.key_with("customers:read")
    refused = client.get("/v1/audit-events", headers=tenant.headers(key))
    assert refused.status_code == 403 and refused.get_json()["code"] == "insufficient_scope"
    for query in ({"action": "nothing.done"}, {"actorKind": "ROBOT"}, {"limit": 101},
                  {"from": "yesterday"}):
        assert client.get("/v1/audit-events", query_string=query,
                          headers=tenant.headers()).status_code == 422, query


def test_companies_see_only_their_own_record(client, tenant, other_tenant):
    customer = enrol(client, tenant)
    credit(client, tenant, customer["id"], "1.00")
    assert _events(client, other_tenant)["total"] == 0


def test_the_owner_reads_the_record_in_the_portal(app, client, tenant):
    add_staff(app, tenant.company_id, "owner@example.com", "owner", name="Olga")
    customer = enrol(client, tenant)
    credit(client, tenant, customer["id"], "1.00")
    portal = app.test_client()
    sign_in(portal, "owner@example.com")
    html = portal.get("/portal/audit").get_data(as_text=True)
    assert html.index("staff.signed_in") < html.index("reward.adjusted") < html.index("staff.added")
    assert "all scopes" in html


def test_the_portals_audit_page_pages_without_counting_the_record(app, tenant, db):
    add_staff(app, tenant.company_id, "owner@example.com", "owner", name="Olga")
    for number in range(50):
        audit.record(db, tenant.company_id, audit.operator(), "store.created", "store",
                     f"store-{number}", at=utcnow() - timedelta(minutes=1))
    db.commit()
    portal = app.test_client()
    sign_in(portal, "owner@example.com")  # signed in, added, then the 50 older: 52 lines
    first = portal.get("/portal/audit").get_data(as_text=True)
    assert first.count("<code>store.created</code>") == 48 and "?offset=50" in first
    assert "staff.added" in first
    second = portal.get("/portal/audit?offset=50").get_data(as_text=True)
    assert second.count("<code>store.created</code>") == 2
    assert "offset=100" not in second
