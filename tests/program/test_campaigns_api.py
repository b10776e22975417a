"""Campaigns through the API (docs/api.md#tiers): create, list, change, delete; bounds; tenants."""
from __future__ import annotations

import pytest

from tests.program.helpers import create_campaign, moment


def _locs(response):
    assert response.status_code == 422, response.get_json()
    return [item["loc"] for item in response.get_json()["detail"]]


def test_a_campaign_is_created_as_given(client, tenant, shop):
    body = create_campaign(client, tenant, name=" Coffee week ", accrualPercent="12.5",
                           skus=["LATTE", "LATTE", "FLAT"], categories=["coffee"],
                           storeIds=[shop.store_id])
    assert body["name"] == "Coffee week" and body["accrualPercent"] == "12.50"
    assert (body["skus"], body["categories"], body["storeIds"]) == (
        ["LATTE", "FLAT"], ["coffee"], [shop.store_id])
    assert body["active"] is True and body["createdAt"].endswith("Z")
    assert body["startsAt"].endswith("Z") and body["endsAt"] > body["startsAt"]


@pytest.mark.parametrize("fields, loc", [
    ({"name": ""}, ["body", "name"]),
    ({"name": "x" * 101}, ["body", "name"]),
    ({"accrualPercent": "100.5"}, ["body", "accrualPercent"]),
    ({"accrualPercent": 10}, ["body", "accrualPercent"]),
    ({"startsAt": "yesterday"}, ["body", "startsAt"]),
    ({"endsAt": moment(hours=-2)}, ["body", "endsAt"]),
    ({"skus": ["A"] * 1001}, ["body", "skus"]),
    ({"skus": [""]}, ["body", "skus", 0]),
    ({"categories": [f"c{i}" for i in range(101)]}, ["body", "categories"]),
    ({"storeIds": [f"s{i}" for i in range(1001)]}, ["body", "storeIds"]),
    ({"storeIds": ["not-a-store"]}, ["body", "storeIds", 0]),
    ({"companyId": "x"}, ["body", "companyId"]),
])
def test_a_bad_campaign_is_a_422_and_nothing_is_made(client, tenant, fields, loc):
    response = client.post("/v1/campaigns", json={
        "name": "Bad", "startsAt": moment(hours=-1), "endsAt": moment(days=1),
        "accrualPercent": "10", **fields}, headers=tenant.headers())
    assert loc in _locs(response)
    assert client.get("/v1/campaigns", headers=tenant.headers()).get_json()["total"] == 0


def test_a_store_of_another_company_is_a_422(client, tenant, other_tenant, shop):
    response = client.post("/v1/campaigns", json={
        "name": "Theirs", "startsAt": moment(hours=-1), "endsAt": moment(days=1),
        "accrualPercent": "10", "storeIds": [shop.store_id]}, headers=other_tenant.headers())
    assert ["body", "storeIds", 0] in _locs(response)


def test_an_unknown_store_is_named_at_its_place_in_the_request(client, tenant, shop):
    # The lists are de-duplicated, but the 422 points at the request as it was sent.
    response = client.post("/v1/campaigns", json={
        "name": "Twice", "startsAt": moment(hours=-1), "endsAt": moment(days=1),
        "accrualPercent": "10", "storeIds": [shop.store_id, shop.store_id, "not-a-store"]},
        headers=tenant.headers())
    assert _locs(response) == [["body", "storeIds", 2]]


def test_the_list_is_newest_first_in_pages(client, tenant):
    made = [create_campaign(client, tenant, name=f"C{i}")["id"] for i in range(3)]
    page = client.get("/v1/campaigns?page=1&pageSize=2", headers=tenant.headers()).get_json()
    assert (page["page"], page["pageSize"], page["total"]) == (1, 2, 3)
    second = client.get("/v1/campaigns?page=2&pageSize=2", headers=tenant.headers()).get_json()
    assert [item["id"] for item in page["items"] + second["items"]] == made[::-1]


@pytest.mark.parametrize("query", ["pageSize=0", "pageSize=51", "pageSize=200", "page=0"])
def test_a_page_is_at_most_50_campaigns(client, tenant, query):
    # One campaign shows at most ~130 KB (1,000 skus, 100 categories, 1,000 stores in full):
    # 50 of them keep a page within a few megabytes.
    response = client.get(f"/v1/campaigns?{query}", headers=tenant.headers())
    assert _locs(response) == [["query", query.split("=")[0]]]


def test_a_page_is_20_campaigns_unless_asked(client, tenant):
    page = client.get("/v1/campaigns?pageSize=50", headers=tenant.headers()).get_json()
    assert page["pageSize"] == 50
    assert client.get("/v1/campaigns", headers=tenant.headers()).get_json()["pageSize"] == 20
    document = client.get("/openapi.json").get_json()
    page_size = next(parameter for parameter in document["paths"]["/v1/campaigns"]["get"][
        "parameters"] if parameter["name"] == "pageSize")
    assert (page_size["schema"]["minimum"], page_size["schema"]["maximum"]) == (1, 50)


def test_a_change_and_a_delete_keep_the_campaign(client, tenant):
    campaign = create_campaign(client, tenant)
    path = f"/v1/campaigns/{campaign['id']}"
    changed = client.patch(path, json={"name": "Renamed", "endsAt": moment(days=30)},
                           headers=tenant.headers())
    assert changed.status_code == 200 and changed.get_json()["name"] == "Renamed"
    assert client.patch(path, json={"active": False}, headers=tenant.headers()).get_json()["active"] is False
    assert client.patch(path, json={"active": True}, headers=tenant.headers()).get_json()["active"] is True
    assert client.delete(path, headers=tenant.headers()).status_code == 204
    listed = client.get("/v1/campaigns", headers=tenant.headers()).get_json()["items"]
    assert [(item["id"], item["name"], item["active"]) for item in listed] == [
        (campaign["id"], "Renamed", False)]


@pytest.mark.parametrize("body, loc", [
    ({}, ["body"]),
    ({"endsAt": moment(days=-3)}, ["body", "endsAt"]),
    ({"active": "no"}, ["body", "active"]),
    ({"startsAt": moment(days=1)}, ["body", "startsAt"]),
    ({"name": " "}, ["body", "name"]),
])
def test_a_bad_change_is_a_422(client, tenant, body, loc):
    campaign = create_campaign(client, tenant)
    assert loc in _locs(client.patch(f"/v1/campaigns/{campaign['id']}", json=body,
                                     headers=tenant.headers()))


def test_another_companys_campaign_is_not_found(client, tenant, other_tenant):
    campaign = create_campaign(client, tenant)
    path = f"/v1/campaigns/{campaign['id']}"
    for response in (client.patch(path, json={"name": "Mine"}, headers=other_tenant.headers()),
                     client.delete(path, headers=other_tenant.headers()),
                     client.delete("/v1/campaigns/not-an-id", headers=tenant.headers())):
        assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    assert client.get("/v1/campaigns", headers=other_tenant.headers()).get_json()["total"] == 0
    assert client.get("/v1/campaigns", headers=tenant.headers()).get_json()["items"][0]["active"] is True


def test_campaigns_need_their_scopes(client, tenant):
    reader = tenant.key_with("program:read")
    assert client.get("/v1/campaigns", headers=tenant.headers(reader)).status_code == 200
    response = client.post("/v1/campaigns", json={}, headers=tenant.headers(reader))
    assert response.status_code == 403 and response.get_json()["code"] == "insufficient_scope"
    writer = tenant.key_with("program:write")
    assert client.get("/v1/campaigns", headers=tenant.headers(writer)).status_code == 403
