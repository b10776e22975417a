"""Inputs the schemathesis fuzz test (test_fuzz_openapi.py) once turned into a 500, kept as
plain requests so each stays fixed whatever the fuzzer happens to generate."""
from __future__ import annotations

import uuid

import pytest


@pytest.mark.parametrize("name", ["³", "٣", "７", "7"])
def test_an_unknown_field_named_by_a_digit_is_a_422_on_that_name(client, tenant, name):
    # "³".isdigit() is true but int("³") fails: the error body itself used to raise.
    response = client.post("/v1/checkout-sessions",
                           headers=tenant.headers(Idempotency_Key=uuid.uuid4().hex),
                           json={"externalReceiptId": "r-1", "customerId": "nobody", name: 1,
                                 "cashier": {"externalId": "c-1", "name": "Anna", name: []}})
    assert response.status_code == 422
    unknown = {tuple(item["loc"]) for item in response.get_json()["detail"]
               if item["type"] == "unknown_field"}
    assert unknown == {("body", name), ("body", "cashier", name)}
