"""At most 100 live campaigns (active and not ended) per company (docs/api.md#tiers): creating or
resuming one beyond is 409 campaign_limit_reached; ended, paused and deleted ones leave room."""
from __future__ import annotations

import pytest

from app.services.program.campaigns import MOST_LIVE
from tests.concurrency import run_together
from tests.program.helpers import create_campaign, moment


def _full(client, tenant, live: int = MOST_LIVE) -> list[str]:
    return [create_campaign(client, tenant, name=f"C{i}")["id"] for i in range(live)]


def _refused(response) -> None:
    assert response.status_code == 409, response.get_json()
    assert response.get_json()["code"] == "campaign_limit_reached"


def _total(client, tenant) -> int:
    return client.get("/v1/campaigns", headers=tenant.headers()).get_json()["total"]


def _post(client, tenant, name: str, **fields):
    return client.post("/v1/campaigns", json={
        "name": name, "startsAt": moment(hours=-1), "endsAt": moment(days=2),
        "accrualPercent": "10", **fields}, headers=tenant.headers())


def _patch(client, tenant, campaign_id: str, **body):
    return client.patch(f"/v1/campaigns/{campaign_id}", json=body, headers=tenant.headers())


def test_the_101st_live_campaign_is_refused_and_nothing_is_made(client, tenant, other_tenant):
    assert MOST_LIVE == 100
    _full(client, tenant)
    _refused(_post(client, tenant, "One too many", startsAt=moment(days=1)))
    assert _total(client, tenant) == MOST_LIVE
    create_campaign(client, other_tenant)  # each company counts its own
    # One that has already ended is not live: it is made.
    create_campaign(client, tenant, startsAt=moment(days=-3), endsAt=moment(days=-2))
    assert _total(client, tenant) == MOST_LIVE + 1


def test_a_paused_ended_or_deleted_campaign_leaves_room(client, tenant):
    first, second, third = _full(client, tenant)[:3]
    assert _patch(client, tenant, first, active=False).status_code == 200
    create_campaign(client, tenant, name="In the paused one's place")
    assert _patch(client, tenant, second, endsAt=moment(minutes=-1)).status_code == 200
    create_campaign(client, tenant, name="In the ended one's place")
    assert client.delete(f"/v1/campaigns/{third}", headers=tenant.headers()).status_code == 204
    create_campaign(client, tenant, name="In the deleted one's place")
    _refused(_post(client, tenant, "Full again"))


def test_resuming_beyond_the_limit_is_refused_and_changes_nothing(client, tenant):
    paused, ended = _full(client, tenant)[:2]
    assert _patch(client, tenant, paused, active=False).status_code == 200
    assert _patch(client, tenant, ended, endsAt=moment(minutes=-1)).status_code == 200
    create_campaign(client, tenant, name="Takes a place")
    create_campaign(client, tenant, name="Takes the other")
    _refused(_patch(client, tenant, paused, active=True, name="Renamed"))
    _refused(_patch(client, tenant, ended, endsAt=moment(days=9)))  # an end moved on: live again
    items = {item["id"]: item for page in range(1, 4) for item in client.get(
        f"/v1/campaigns?pageSize=50&page={page}", headers=tenant.headers()).get_json()["items"]}
    assert (items[paused]["active"], items[paused]["name"]) == (False, "C0")
    assert items[ended]["endsAt"] < moment()
    # Changes that leave a live campaign live, or end one, are not counted.
    live = next(i for i, item in items.items() if item["active"] and i not in (paused, ended))
    assert _patch(client, tenant, live, name="Still live", active=True).status_code == 200
    assert _patch(client, tenant, live, active=False).status_code == 200
    assert _patch(client, tenant, paused, active=True).status_code == 200  # its place now


@pytest.mark.postgres
def test_two_creates_at_99_live_make_exactly_one(app, client, tenant):
    _full(client, tenant, MOST_LIVE - 1)
    responses = run_together([
        lambda i=i: _post(app.test_client(), tenant, f"Race {i}") for i in range(2)])
    assert sorted(r.status_code for r in responses) == [201, 409]
    _refused(next(r for r in responses if r.status_code == 409))
    assert _total(client, tenant) == MOST_LIVE


@pytest.mark.postgres
def test_concurrent_resumes_never_pass_the_limit(app, client, tenant):
    paused = _full(client, tenant)[:6]
    for campaign_id in paused:
        assert _patch(client, tenant, campaign_id, active=False).status_code == 200
    for i in range(3):
        create_campaign(client, tenant, name=f"Newer {i}")
    responses = run_together([
        lambda campaign_id=campaign_id: _patch(app.test_client(), tenant, campaign_id, active=True)
        for campaign_id in paused])
    assert sorted(r.status_code for r in responses) == [200] * 3 + [409] * 3
    live = [item for page in range(1, 4) for item in client.get(
        f"/v1/campaigns?pageSize=50&page={page}", headers=tenant.headers()).get_json()["items"]
            if item["active"]]
    assert len(live) == MOST_LIVE
