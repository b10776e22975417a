"""Catalog sync: the complete snapshot of one store, reconciled atomically."""
from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import func, select

from app.models import CatalogItem, CatalogSync, OutboxEvent
from tests.api.locations_helpers import create_store, validation_locs


@pytest.fixture
def store(client, tenant):
    return create_store(client, tenant)


def item(sku: str, **fields) -> dict:
    return {"sku": sku, "name": f"Product {sku}", "price": "100.00", **fields}


def sync(client, tenant, store_id, items, key=None, **more):
    body = {"storeId": store_id, "items": items, **more}
    return client.post("/v1/catalog-syncs", json=body,
                       headers=tenant.headers(Idempotency_Key=key or uuid.uuid4().hex))


def catalog(db, company_id, store_id) -> dict[str, tuple]:
    db.expire_all()
    rows = db.scalars(select(CatalogItem).where(CatalogItem.company_id == company_id,
                                                CatalogItem.store_id == store_id))
    return {r.sku: (r.name, r.price, r.barcode, r.category, r.redeemable, r.accruable) for r in rows}


def counts(response) -> tuple:
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    return body["received"], body["created"], body["updated"], body["removed"], body["unchanged"]


def test_first_sync_creates_every_item(client, tenant, store, db):
    response = sync(client, tenant, store["id"], [
        item("milk", price="89.90", barcode="4600000000011", category="Dairy"),
        item("bread", redeemable=False),
        item("tobacco", price="250", redeemable=False, accruable=False),
    ])

    assert counts(response) == (3, 3, 0, 0, 0)
    body = response.get_json()
    assert body["storeId"] == store["id"] and body["syncedAt"].endswith("Z") and body["id"]
    assert catalog(db, tenant.company_id, store["id"]) == {
        "milk": ("Product milk", 8990, "4600000000011", "Dairy", True, True),
        "bread": ("Product bread", 10000, None, None, False, True),
        "tobacco": ("Product tobacco", 25000, None, None, False, False),
    }


def test_second_sync_changes_removes_keeps_and_adds(client, tenant, store, db):
    sync(client, tenant, store["id"], [item("keep"), item("change"), item("remove"),
                                       item("flags"), item("clear", barcode="123")])

    second = sync(client, tenant, store["id"], [
        item("keep"),
        item("change", price="120.50", name="New name"),
        item("flags", accruable=False),
        item("clear"),
        item("new", category="Fresh"),
    ])

    assert counts(second) == (5, 1, 3, 1, 1)
    assert catalog(db, tenant.company_id, store["id"]) == {
        "keep": ("Product keep", 10000, None, None, True, True),
        "change": ("New name", 12050, None, None, True, True),
        "flags": ("Product flags", 10000, None, None, True, False),
        "clear": ("Product clear", 10000, None, None, True, True),
        "new": ("Product new", 10000, None, "Fresh", True, True),
    }
    again = sync(client, tenant, store["id"], [item("keep")], key="third-sync")
    assert counts(again) == (1, 0, 0, 4, 1)


def test_sync_emits_catalog_synced_with_the_response(client, tenant, store, db):
    response = sync(client, tenant, store["id"], [item("a")])

    events = db.scalars(select(OutboxEvent).where(OutboxEvent.company_id == tenant.company_id,
                                                  OutboxEvent.type == "catalog.synced")).all()
    assert len(events) == 1
    assert json.loads(events[0].payload)["data"] == response.get_json()


def test_failed_syncs_leave_the_previous_snapshot_intact(client, tenant, store, db):
    sync(client, tenant, store["id"], [item("a"), item("b", price="5.00")])
    before = catalog(db, tenant.company_id, store["id"])

    invalid_item = sync(client, tenant, store["id"], [item("a", price="1.00"), item("c"),
                                                      item("d", price="cheap")])
    assert validation_locs(invalid_item) == [["body", "items", 2, "price"]]
    duplicate = sync(client, tenant, store["id"], [item("a", price="1.00"), item("c"), item("a")])
    assert validation_locs(duplicate) == [["body", "items", 2, "sku"]]
    assert duplicate.get_json()["detail"][0]["type"] == "duplicate_sku"
    empty = sync(client, tenant, store["id"], [])
    assert validation_locs(empty) == [["body", "items"]]

    assert catalog(db, tenant.company_id, store["id"]) == before
    assert db.scalar(select(func.count()).select_from(CatalogSync)) == 1
    assert db.scalar(select(func.count()).select_from(OutboxEvent).where(
        OutboxEvent.type == "catalog.synced")) == 1


def test_an_empty_snapshot_with_allow_empty_removes_everything(client, tenant, store, db):
    sync(client, tenant, store["id"], [item("a"), item("b")])
    response = sync(client, tenant, store["id"], [], allowEmpty=True)
    assert counts(response) == (0, 0, 0, 2, 0)
    assert catalog(db, tenant.company_id, store["id"]) == {}


def test_stores_have_separate_catalogs(client, tenant, other_tenant, store, db):
    second_store = create_store(client, tenant)
    their_store = create_store(client, other_tenant)
    sync(client, tenant, store["id"], [item("a"), item("b")])
    sync(client, other_tenant, their_store["id"], [item("a"), item("z")])

    assert counts(sync(client, tenant, second_store["id"], [item("a", price="1")])) == (1, 1, 0, 0, 0)
    assert set(catalog(db, tenant.company_id, store["id"])) == {"a", "b"}
    assert catalog(db, tenant.company_id, second_store["id"])["a"][1] == 100
    assert set(catalog(db, other_tenant.company_id, their_store["id"])) == {"a", "z"}


def test_unknown_or_foreign_store_is_404(client, tenant, other_tenant, db):
    theirs = create_store(client, other_tenant)
    for store_id in (theirs["id"], "no-such-store"):
        response = sync(client, tenant, store_id, [item("a")])
        assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    assert db.scalar(select(func.count()).select_from(CatalogItem)) == 0


@pytest.mark.parametrize("bad, loc", [
    ({"sku": ""}, ["body", "items", 0, "sku"]),
    ({"sku": "s" * 65}, ["body", "items", 0, "sku"]),
    ({"sku": 42}, ["body", "items", 0, "sku"]),
    ({"name": ""}, ["body", "items", 0, "name"]),
    ({"name": "n" * 256}, ["body", "items", 0, "name"]),
    ({"name": "nul\x00"}, ["body", "items", 0, "name"]),
    ({"price": 10.5}, ["body", "items", 0, "price"]),
    ({"price": "-1.00"}, ["body", "items", 0, "price"]),
    ({"price": "1.005"}, ["body", "items", 0, "price"]),
    ({"barcode": "b" * 65}, ["body", "items", 0, "barcode"]),
    ({"category": "c" * 256}, ["body", "items", 0, "category"]),
    ({"redeemable": "yes"}, ["body", "items", 0, "redeemable"]),
    ({"accruable": 1}, ["body", "items", 0, "accruable"]),
    ({"pin": "1234"}, ["body", "items", 0, "pin"]),
])
def test_item_fields_are_checked(client, tenant, store, bad, loc):
    response = sync(client, tenant, store["id"], [item("ok-first") | {"sku": "x"} | bad, item("y")])
    assert validation_locs(response) == [loc]


@pytest.mark.parametrize("field", ["sku", "name", "price"])
def test_item_required_fields(client, tenant, store, field):
    broken = item("a")
    del broken[field]
    response = sync(client, tenant, store["id"], [item("z"), broken])
    assert validation_locs(response) == [["body", "items", 1, field]]
    assert response.get_json()["detail"][0]["type"] == "missing"


def test_every_invalid_item_is_reported(client, tenant, store):
    response = sync(client, tenant, store["id"], [item("a"), "not an object", item("c", price=1),
                                                  item("d")])
    assert validation_locs(response) == [["body", "items", 1], ["body", "items", 2, "price"]]


@pytest.mark.parametrize("body, loc", [
    ({"items": [item("a")]}, ["body", "storeId"]),
    ({"storeId": "s"}, ["body", "items"]),
    ({"storeId": "s", "items": {"sku": "a"}}, ["body", "items"]),
    ({"storeId": "s", "items": [item("a")], "allowEmpty": "true"}, ["body", "allowEmpty"]),
    ({"storeId": "s", "items": [item("a")], "companyId": "x"}, ["body", "companyId"]),
    ({"storeId": "s\x00", "items": [item("a")]}, ["body", "storeId"]),
])
def test_request_fields_are_checked(client, tenant, body, loc):
    response = client.post("/v1/catalog-syncs", json=body, headers=tenant.headers(Idempotency_Key="k"))
    assert validation_locs(response) == [loc]


def test_more_than_100000_items_is_422(client, tenant, store, db):
    items = [{"sku": str(i), "name": "n", "price": "1"} for i in range(100_001)]
    response = sync(client, tenant, store["id"], items, key="too-many")
    assert validation_locs(response) == [["body", "items"]]
    assert db.scalar(select(func.count()).select_from(CatalogItem)) == 0


def test_missing_body_and_idempotency_key_bounds(client, tenant, store):
    no_body = client.post("/v1/catalog-syncs", headers=tenant.headers(Idempotency_Key="k"))
    assert validation_locs(no_body) == [["body"]]
    body = {"storeId": store["id"], "items": [item("a")]}
    no_key = client.post("/v1/catalog-syncs", json=body, headers=tenant.headers())
    assert validation_locs(no_key) == [["header", "Idempotency-Key"]]
    for key in ("", "k" * 129):
        response = client.post("/v1/catalog-syncs", json=body, headers=tenant.headers(Idempotency_Key=key))
        assert validation_locs(response) == [["header", "Idempotency-Key"]]
    for key in ("k", "k" * 128):
        response = client.post("/v1/catalog-syncs", json=body, headers=tenant.headers(Idempotency_Key=key))
        assert response.status_code == 201, response.get_json()


def test_a_retried_sync_replays_and_a_reused_key_is_refused(client, tenant, store, db):
    first = sync(client, tenant, store["id"], [item("a")], key="sync-1")
    sync(client, tenant, store["id"], [item("b")], key="sync-2")
    replay = sync(client, tenant, store["id"], [item("a")], key="sync-1")

    assert replay.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"
    assert replay.get_json() == first.get_json()
    assert set(catalog(db, tenant.company_id, store["id"])) == {"b"}  # not synced twice
    reused = sync(client, tenant, store["id"], [item("c")], key="sync-1")
    assert reused.get_json()["detail"][0]["type"] == "idempotency_key_reused"


def test_sync_needs_the_products_scope(client, tenant, store):
    key = tenant.key_with("locations:write", "locations:read")
    response = client.post("/v1/catalog-syncs", json={"storeId": store["id"], "items": [item("a")]},
                           headers=tenant.headers(key=key, Idempotency_Key="k"))
    assert response.status_code == 403 and response.get_json()["code"] == "insufficient_scope"
