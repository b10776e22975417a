"""A path with a doubled slash is a 404 on every route, wherever the slashes are, and no
answer is built from the Host header: werkzeug strips the slashes a path begins with before
routing it, so `//cards/<token>` would be the card page. The test client reads `//cards/…`
as a host and a path, so the path is set as the server hands it over (PATH_INFO)."""
from __future__ import annotations

import pytest

from testbed.cards import make_customer
from tests.api.test_gift_cards import issue


@pytest.fixture
def paths(tenant, db):
    customer = make_customer(db, tenant.company_id)
    [code] = issue(db, tenant.company_id)
    return [(f"//cards/{customer.card_token}", {}),
            (f"///cards/{customer.card_token}.pkpass", {}),
            (f"//v1/gift-cards/{code}", tenant.headers()),
            ("//v1/company", tenant.headers()),
            ("//health", {}),
            ("//openapi.json", {}),
            ("/v1/sales/by-external-receipt/R-1//2", tenant.headers())]


def test_a_path_with_a_doubled_slash_is_404_whatever_the_host(client, paths):
    for path, headers in paths:
        for host in ("evil.example", "cards"):
            response = client.get("/", headers={**headers, "Host": host},
                                  environ_overrides={"PATH_INFO": path})
            assert (response.status_code, response.get_json()) == (
                404, {"detail": "not found", "code": "not_found"}), path
            assert "Location" not in response.headers
