"""The program page: settings, tiers and campaigns changed through the API's schemas and
services, refused with the API's messages, recorded in the audit, and only the company's own."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import AuditEvent
from tests.checkout.conftest import line
from tests.portal.helpers import post_form


def _program(client, tenant) -> dict:
    return client.get("/v1/program", headers=tenant.headers()).get_json()


def _as_form(program: dict, **changes) -> dict:
    """The program form as the page fills it from the program, with `changes` typed in."""
    form = {name: "" if value is None else str(value).lower() if isinstance(value, bool)
            else str(value) for name, value in program.items()
            if name not in ("id", "name", "currency", "tiers")}
    return form | changes


def _audit(db, company_id, action):
    db.expire_all()
    return db.scalars(select(AuditEvent).where(AuditEvent.company_id == company_id,
                                               AuditEvent.action == action)).all()


def test_the_settings_and_tiers_are_changed_as_the_api_changes_them(manager, client, tenant, db):
    form = _as_form(_program(client, tenant), accrualPercent="7,5", pointsLifetimeDays="",
                    tierName=["Base", "Gold", ""], tierMinSpend=["0", "50 000,00", ""],
                    tierAccrualPercent=["5", "10", ""])
    answer = post_form(manager, "/portal/program", "/portal/program", form)
    assert answer.status_code == 303
    program = _program(client, tenant)
    assert program["accrualPercent"] == "7.50" and program["pointsLifetimeDays"] is None
    assert program["tiers"] == [
        {"name": "Base", "minSpend": "0.00", "accrualPercent": "5.00"},
        {"name": "Gold", "minSpend": "50000.00", "accrualPercent": "10.00"}]
    [event] = _audit(db, tenant.company_id, "program.updated")
    assert (event.actor_kind, event.actor_name) == ("STAFF", "Mia Manager")


@pytest.mark.parametrize("changes, message", [
    ({"accrualPercent": "lots"}, "accrualPercent: "),
    ({"holdTtlSeconds": "5"}, "holdTtlSeconds: "),
    ({"tierName": ["Gold"], "tierMinSpend": ["100"], "tierAccrualPercent": ["10"]}, "tiers"),
])
def test_a_refused_change_shows_the_form_again_and_changes_nothing(manager, client, tenant,
                                                                   changes, message):
    before = _program(client, tenant)
    answer = post_form(manager, "/portal/program", "/portal/program", _as_form(before, **changes))
    html = answer.get_data(as_text=True)
    assert answer.status_code == 422 and 'class="error-summary"' in html and message in html
    assert _program(client, tenant) == before


def _campaigns(client, tenant) -> list[dict]:
    return client.get("/v1/campaigns", headers=tenant.headers()).get_json()["items"]


def test_a_campaign_created_changed_and_ended(manager, client, tenant, db):
    now = utcnow()
    moscow = "%Y-%m-%dT%H:%M"
    starts = (now + timedelta(hours=3)).strftime(moscow)  # Moscow is UTC+3: now
    ends = (now + timedelta(days=7)).strftime(moscow)
    created = post_form(manager, "/portal/program", "/portal/program/campaigns", {
        "name": "Double week", "startsAt": starts, "endsAt": ends, "accrualPercent": "10",
        "skus": "A-1, B-2", "categories": "", "storeIds": ""})
    assert created.status_code == 303
    [campaign] = _campaigns(client, tenant)
    assert (campaign["name"], campaign["accrualPercent"], campaign["skus"]) == (
        "Double week", "10.00", ["A-1", "B-2"])
    assert campaign["startsAt"].startswith(now.strftime("%Y-%m-%dT%H:%M"))

    path = f"/portal/program/campaigns/{campaign['id']}"
    assert post_form(manager, "/portal/program", path, {"name": "Triple week"}).status_code == 303
    assert _campaigns(client, tenant)[0]["name"] == "Triple week"
    assert post_form(manager, "/portal/program", f"{path}/end", {}).status_code == 303
    assert _campaigns(client, tenant)[0]["active"] is False
    for action in ("campaign.created", "campaign.updated", "campaign.ended"):
        assert [e.actor_kind for e in _audit(db, tenant.company_id, action)] == ["STAFF"]


def test_a_refused_campaign_shows_the_apis_message(manager, client, tenant):
    refused = post_form(manager, "/portal/program", "/portal/program/campaigns", {
        "name": "Backwards", "startsAt": "2026-12-10T10:00", "endsAt": "2026-12-01T10:00",
        "accrualPercent": "10"})
    html = refused.get_data(as_text=True)
    assert refused.status_code == 422 and "endsAt: must be later than startsAt" in html
    assert 'value="Backwards"' in html and _campaigns(client, tenant) == []


def test_another_companys_campaign_is_not_found(manager, client, other_tenant):
    theirs = client.post("/v1/campaigns", headers=other_tenant.headers(), json={
        "name": "Theirs", "startsAt": "2026-12-01T00:00:00Z", "endsAt": "2026-12-08T00:00:00Z",
        "accrualPercent": "10.00"}).get_json()
    path = f"/portal/program/campaigns/{theirs['id']}"
    assert post_form(manager, "/portal/program", path, {"name": "Mine"}).status_code == 404
    assert post_form(manager, "/portal/program", f"{path}/end", {}).status_code == 404
    mine = client.get("/v1/campaigns", headers=other_tenant.headers()).get_json()["items"]
    assert [(c["name"], c["active"]) for c in mine] == [("Theirs", True)]


def test_a_campaign_made_in_the_portal_applies_in_a_quote(manager, shop, register):
    now = utcnow()
    form = "%Y-%m-%dT%H:%M"
    made = post_form(manager, "/portal/program", "/portal/program/campaigns", {
        "name": "Half back", "startsAt": (now + timedelta(hours=2)).strftime(form),  # Moscow
        "endsAt": (now + timedelta(days=1)).strftime(form), "accrualPercent": "50"})
    assert made.status_code == 303
    anna = shop.customer()
    session = register.open(anna)
    quote = register.quote(session["id"], [line("1", "1000.00")])
    assert quote["accrual"] == "500.00", quote
