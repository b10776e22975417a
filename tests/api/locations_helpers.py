"""Arranging stores and terminals through the API, as an integrator would."""
from __future__ import annotations

import itertools

_numbers = itertools.count(1)


def store_body(**overrides) -> dict:
    number = next(_numbers)
    body = {"name": f"Store {number}", "address": f"Lenina st. {number}", "city": "Moscow",
            "latitude": 55.75, "longitude": 37.61, "channels": ["MINIAPP"]}
    body.update(overrides)
    return body


def create_store(client, tenant, **overrides) -> dict:
    response = client.post("/v1/stores", headers=tenant.headers(), json=store_body(**overrides))
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def create_terminal(client, tenant, store_id: str, **overrides) -> dict:
    body = {"storeId": store_id, "name": f"Register {next(_numbers)}", **overrides}
    response = client.post("/v1/terminals", headers=tenant.headers(), json=body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def validation_locs(response) -> list:
    assert response.status_code == 422, response.get_json()
    return [item["loc"] for item in response.get_json()["detail"]]
