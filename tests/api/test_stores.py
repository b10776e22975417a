"""Stores: created with address, coordinates, channels and time zone; listed by page."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from app.models import Store
from tests.api.locations_helpers import create_store, store_body, validation_locs


def test_a_new_store_is_active_with_the_defaults(client, tenant):
    body = store_body(name="  Coffee on Arbat ", city=" Moscow ")
    del body["channels"]
    response = client.post("/v1/stores", headers=tenant.headers(), json=body)

    assert response.status_code == 201
    store = response.get_json()
    assert store == {
        "id": store["id"], "name": "Coffee on Arbat", "address": body["address"],
        "city": "Moscow", "latitude": 55.75, "longitude": 37.61, "channels": [],
        "timezone": "Europe/Moscow", "active": True, "createdAt": store["createdAt"],
    }
    assert store["createdAt"].endswith("Z")


def test_store_keeps_channels_once_and_its_time_zone(client, tenant, db):
    store = create_store(client, tenant, channels=["MINIAPP", "MINIAPP"], timezone="Asia/Yekaterinburg",
                         latitude=-90, longitude=180)
    assert store["channels"] == ["MINIAPP"]
    assert store["timezone"] == "Asia/Yekaterinburg"
    assert (store["latitude"], store["longitude"]) == (-90, 180)
    saved = db.scalar(select(Store).where(Store.id == store["id"]))
    assert saved.company_id == tenant.company_id and saved.channels == "MINIAPP"


@pytest.mark.parametrize("change, loc", [
    ({"latitude": 90.01}, ["body", "latitude"]),
    ({"latitude": -91}, ["body", "latitude"]),
    ({"longitude": 180.5}, ["body", "longitude"]),
    ({"longitude": -181}, ["body", "longitude"]),
    ({"latitude": "55.75"}, ["body", "latitude"]),
    ({"longitude": True}, ["body", "longitude"]),
    ({"latitude": None}, ["body", "latitude"]),
    ({"channels": ["WEB"]}, ["body", "channels", 0]),
    ({"channels": "MINIAPP"}, ["body", "channels"]),
    ({"timezone": "Mars/Olympus_Mons"}, ["body", "timezone"]),
    ({"timezone": "../../etc/passwd"}, ["body", "timezone"]),
    ({"name": "   "}, ["body", "name"]),
    ({"name": "n" * 201}, ["body", "name"]),
    ({"address": ""}, ["body", "address"]),
    ({"city": "c" * 121}, ["body", "city"]),
    ({"address": "Lenina\x00 1"}, ["body", "address"]),
    ({"companyId": "someone-else"}, ["body", "companyId"]),
    ({"active": False}, ["body", "active"]),
])
def test_store_fields_are_checked(client, tenant, change, loc):
    response = client.post("/v1/stores", headers=tenant.headers(), json=store_body(**change))
    assert validation_locs(response) == [loc]


@pytest.mark.parametrize("field", ["name", "address", "city", "latitude", "longitude"])
def test_store_required_fields(client, tenant, field):
    body = store_body()
    del body[field]
    response = client.post("/v1/stores", headers=tenant.headers(), json=body)
    assert validation_locs(response) == [["body", field]]
    assert response.get_json()["detail"][0]["type"] == "missing"


def test_store_creation_needs_a_body_and_the_write_scope(client, tenant):
    assert validation_locs(client.post("/v1/stores", headers=tenant.headers())) == [["body"]]
    reader = tenant.key_with("locations:read")
    refused = client.post("/v1/stores", headers=tenant.headers(key=reader), json=store_body())
    assert refused.status_code == 403 and refused.get_json()["code"] == "insufficient_scope"
    assert client.get("/v1/stores", headers=tenant.headers(key=reader)).status_code == 200


def test_stores_are_listed_by_page_oldest_first(client, tenant, other_tenant):
    made = [create_store(client, tenant)["id"] for _ in range(5)]
    create_store(client, other_tenant)

    def page(**query):
        response = client.get("/v1/stores", headers=tenant.headers(), query_string=query)
        assert response.status_code == 200
        return response.get_json()

    first = page(pageSize=2)
    assert (first["page"], first["pageSize"], first["total"]) == (1, 2, 5)
    assert [s["id"] for s in first["items"]] == made[:2]
    assert [s["id"] for s in page(page=3, pageSize=2)["items"]] == made[4:]
    past_the_end = page(page=4, pageSize=2)
    assert past_the_end["items"] == [] and past_the_end["total"] == 5
    assert page(page=10**30)["items"] == []
    defaults = page()
    assert (defaults["page"], defaults["pageSize"]) == (1, 50)
    assert [s["id"] for s in defaults["items"]] == made
    assert len(page(pageSize=200)["items"]) == 5


@pytest.mark.parametrize("query, loc", [
    ({"page": 0}, ["query", "page"]),
    ({"page": -1}, ["query", "page"]),
    ({"page": "first"}, ["query", "page"]),
    ({"pageSize": 0}, ["query", "pageSize"]),
    ({"pageSize": 201}, ["query", "pageSize"]),
])
def test_store_paging_bounds(client, tenant, query, loc):
    response = client.get("/v1/stores", headers=tenant.headers(), query_string=query)
    assert validation_locs(response) == [loc]
