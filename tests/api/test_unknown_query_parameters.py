"""A query parameter an operation does not know is a 422 at ["query", name], as an unknown
body field is, whether the operation has query parameters of its own or none; the ones it
documents keep working."""
from __future__ import annotations

import pytest

from tests.api.locations_helpers import store_body


def unknown_field_items(response) -> list[dict]:
    assert response.status_code == 422, response.get_json()
    return response.get_json()["detail"]


@pytest.mark.parametrize("path", ["/v1/company?format=csv", "/v1/stores?limit=5",
                                  "/v1/customers?page=2", "/v1/cashiers?offset=3", "/v1/terminals?sort=name",
                                  "/v1/reports/liability?format=csv"])
def test_a_read_with_a_parameter_it_does_not_have_is_a_422(client, tenant, path):
    name = path.split("?")[1].split("=")[0]
    items = unknown_field_items(client.get(path, headers=tenant.headers()))
    assert items == [{"loc": ["query", name], "msg": "Unknown field.", "type": "unknown_field"}]


def test_every_unknown_parameter_is_named_beside_the_known_ones_errors(client, tenant):
    answer = client.get("/v1/reports/ledger?from=May&to=2026-05-31&format=csv&x=1",
                        headers=tenant.headers())
    locs = sorted(tuple(item["loc"]) for item in unknown_field_items(answer))
    assert locs == [("query", "format"), ("query", "from"), ("query", "x")]


def test_a_write_with_an_unknown_parameter_changes_nothing(client, tenant):
    answer = client.post("/v1/stores?dryRun=true", json=store_body(), headers=tenant.headers())
    assert [item["loc"] for item in unknown_field_items(answer)] == [["query", "dryRun"]]
    assert client.get("/v1/stores", headers=tenant.headers()).get_json()["total"] == 0


def test_the_documented_parameters_keep_working(client, tenant):
    for path in ("/v1/stores?page=1&pageSize=10",
                 "/v1/reports/ledger?from=2026-05-01&to=2026-05-31&groupBy=month",
                 "/v1/reports/registers?from=2026-05-01&to=2026-05-31&groupBy=terminal"):
        assert client.get(path, headers=tenant.headers()).status_code == 200, path


def test_a_probe_and_a_shoppers_protocol_take_only_their_own(client):
    assert unknown_field_items(client.get("/health?verbose=1"))[0]["loc"] == ["query", "verbose"]
    # Apple's devices send passesUpdatedSince: it is the operation's own (no 422, whatever the
    # wallet's configuration answers).
    listed = client.get("/v1/devices/dev-1/registrations/pass.example?passesUpdatedSince=1")
    assert listed.status_code != 422
