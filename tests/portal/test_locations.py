"""Stores, terminals and cashiers in the portal: the API's schemas, services and limits, the
audit, and only the company's own."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import AuditEvent
from testbed.tenants import make_tenant
from tests.portal.helpers import add_staff, post_form, sign_in

PAGE = "/portal/locations"


def _api(client, tenant, path):
    return client.get(f"/v1/{path}", headers=tenant.headers()).get_json()["items"]


def _store(manager, name="Corner", **more):
    return post_form(manager, PAGE, f"{PAGE}/stores", {
        "name": name, "address": "Lenina 1", "city": "Moscow", "latitude": "55,75",
        "longitude": "37.61", **more})


def test_a_store_and_its_terminal_made_renamed_moved_and_disabled(manager, client, tenant, db):
    assert _store(manager, channels="MINIAPP").status_code == 303
    assert _store(manager, name="Market").status_code == 303
    corner, market = _api(client, tenant, "stores")
    assert (corner["name"], corner["latitude"], corner["channels"]) == ("Corner", 55.75,
                                                                       ["MINIAPP"])
    made = post_form(manager, PAGE, f"{PAGE}/terminals", {"storeId": corner["id"],
                                                          "name": "Till 1", "posKey": "till-1"})
    assert made.status_code == 303
    [terminal] = _api(client, tenant, "terminals")
    path = f"{PAGE}/terminals/{terminal['id']}"
    assert post_form(manager, PAGE, path, {"name": "Till A",
                                           "storeId": market["id"]}).status_code == 303
    assert post_form(manager, PAGE, path, {"state": "DISABLED"}).status_code == 303
    [terminal] = _api(client, tenant, "terminals")
    assert (terminal["name"], terminal["storeId"], terminal["state"]) == (
        "Till A", market["id"], "DISABLED")
    db.expire_all()
    actions = db.scalars(select(AuditEvent.action).where(
        AuditEvent.company_id == tenant.company_id, AuditEvent.actor_kind == "STAFF",
        AuditEvent.action != "staff.signed_in")).all()
    # The rename and the move are one change, one record.
    assert sorted(actions) == ["store.created", "store.created", "terminal.created",
                               "terminal.updated", "terminal.updated"]


def test_the_register_limit_is_shown_and_held(app, client):
    tenant = make_tenant(app, "Small Shop", register_limit=1)
    manager = app.test_client()
    add_staff(app, tenant.company_id, "small@example.com", "manager")
    assert sign_in(manager, "small@example.com").status_code == 303
    assert _store(manager).status_code == 303
    [store] = _api(client, tenant, "stores")
    for name in ("Till 1", "Till 2"):
        answer = post_form(manager, PAGE, f"{PAGE}/terminals", {"storeId": store["id"],
                                                                "name": name})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 409 and "allows 1 active terminals" in html
    assert 'value="Till 2"' in html and len(_api(client, tenant, "terminals")) == 1
    assert "1 of 1" in manager.get(PAGE, headers={"Accept-Language": "en"}).get_data(
        as_text=True)


@pytest.mark.parametrize("form, message", [
    ({"latitude": "north"}, "latitude: "), ({"latitude": "91"}, "latitude: "),
    ({"timezone": "Mars/Olympus"}, "timezone: "), ({"name": ""}, "name: ")])
def test_a_refused_store_shows_the_apis_message(manager, client, tenant, form, message):
    answer = _store(manager, **form)
    assert answer.status_code == 422 and message in answer.get_data(as_text=True)
    assert _api(client, tenant, "stores") == []


def test_another_companys_terminal_is_not_found(manager, other_tenant, app):
    theirs = app.test_client()
    add_staff(app, other_tenant.company_id, "theirs@example.com", "owner")
    assert sign_in(theirs, "theirs@example.com").status_code == 303
    assert _store(theirs).status_code == 303
    [store] = _api(app.test_client(), other_tenant, "stores")
    post_form(theirs, PAGE, f"{PAGE}/terminals", {"storeId": store["id"], "name": "Theirs"})
    [terminal] = _api(app.test_client(), other_tenant, "terminals")
    answer = post_form(manager, PAGE, f"{PAGE}/terminals/{terminal['id']}", {"name": "Mine"})
    assert answer.status_code == 404
    assert post_form(manager, PAGE, f"{PAGE}/terminals", {
        "storeId": store["id"], "name": "Into theirs"}).status_code == 404
    assert [t["name"] for t in _api(app.test_client(), other_tenant, "terminals")] == ["Theirs"]
