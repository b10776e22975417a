"""The place directory: only ACTIVE stores published to MINIAPP, grouped by city."""
from __future__ import annotations

from sqlalchemy import update

from app.models import Store
from tests.api.locations_helpers import create_store


def _directory(client, tenant) -> dict:
    response = client.get("/v1/place-directory", headers=tenant.headers())
    assert response.status_code == 200
    return response.get_json()


def test_an_empty_company_has_no_cities(client, tenant):
    assert _directory(client, tenant) == {"cities": []}


def test_only_active_miniapp_stores_are_listed_grouped_by_city(client, tenant, other_tenant, db):
    tver = create_store(client, tenant, name="Tver Central", city="Tver", latitude=56.86,
                        longitude=35.9)
    moscow_b = create_store(client, tenant, name="B on Arbat", city="Moscow")
    moscow_a = create_store(client, tenant, name="A on Tverskaya", city="Moscow")
    closed = create_store(client, tenant, name="Closed", city="Moscow")
    create_store(client, tenant, name="Hidden", city="Moscow", channels=[])
    create_store(client, tenant, name="Only hidden here", city="Kazan", channels=[])
    create_store(client, other_tenant, name="Theirs", city="Moscow")
    create_store(client, other_tenant, name="Theirs too", city="Omsk")
    db.execute(update(Store).where(Store.id == closed["id"]).values(active=False))
    db.commit()

    def entry(store):
        return {key: store[key] for key in ("id", "name", "address", "latitude", "longitude")}

    assert _directory(client, tenant) == {"cities": [
        {"name": "Moscow", "stores": [entry(moscow_a), entry(moscow_b)]},
        {"name": "Tver", "stores": [entry(tver)]},
    ]}


def test_a_city_whose_stores_all_closed_leaves_the_directory(client, tenant, db):
    store = create_store(client, tenant, city="Samara")
    assert [c["name"] for c in _directory(client, tenant)["cities"]] == ["Samara"]
    db.execute(update(Store).where(Store.id == store["id"]).values(active=False))
    db.commit()
    assert _directory(client, tenant) == {"cities": []}


def test_place_directory_needs_the_read_scope(client, tenant):
    key = tenant.key_with("company:read")
    response = client.get("/v1/place-directory", headers=tenant.headers(key=key))
    assert response.status_code == 403 and response.get_json()["code"] == "insufficient_scope"
