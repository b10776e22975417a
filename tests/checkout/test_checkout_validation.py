"""Request validation (422 in the HTTPValidationError shape, after auth and scope), and the
response bodies matching the documented schemas field for field."""
import marshmallow as ma
import pytest

from app.api.checkout_schemas import (CheckoutSessionResponse, HoldResponse, QuoteResponse,
                                      SaleResponse)
from app.api.sales_schemas import ReturnResponse, SaleLookupResponse
from tests.checkout.conftest import line


@pytest.fixture
def session_id(register, shop):
    return register.open(shop.customer("100.00"))["id"]


@pytest.mark.parametrize("body, loc", [
    ({"lines": [line("1", "1.00"), line("1", "2.00")]}, ["body", "lines"]),
    ({"lines": [line("1", "-1.00")]}, ["body", "lines", 0, "amount"]),
    ({"lines": [{**line("1", "1.00"), "amount": 1.0}]}, ["body", "lines", 0, "amount"]),
    ({"lines": [line("1", "1.001")]}, ["body", "lines", 0, "amount"]),
    ({"lines": [line("1", "100000000001.00")]}, ["body", "lines", 0, "amount"]),
    ({"lines": [line("1", "1.00", quantity="0")]}, ["body", "lines", 0, "quantity"]),
    ({"lines": [line("a\x00b", "1.00")]}, ["body", "lines", 0, "lineId"]),
    ({"lines": [{"lineId": "1", "quantity": "1", "amount": "1.00"}]},
     ["body", "lines", 0, "price"]),
    ({"lines": []}, ["body", "lines"]),
    ({"lines": [line("1", "1.00")], "redeemAmount": "-1"}, ["body", "redeemAmount"]),
    ({"lines": [line("1", "1.00")], "customerId": "x"}, ["body", "customerId"]),
    ({}, ["body", "lines"]),
])
def test_quote_body_is_validated(register, session_id, body, loc):
    register.call("POST", f"/v1/checkout-sessions/{session_id}/quote", body, expect=422)
    assert loc in [item["loc"] for item in register.last.get_json()["detail"]]


def test_a_missing_body_and_the_order_of_checks(register, shop, session_id):
    response = register.client.post(f"/v1/checkout-sessions/{session_id}/hold",
                                     headers=register.headers())
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["loc"] == ["body"]
    # A key without checkout:write learns nothing about the body.
    key = shop.tenant.key_with("customers:read")
    response = register.client.post(f"/v1/checkout-sessions/{session_id}/quote", json={},
                                    headers=shop.tenant.headers(key, Idempotency_Key="k" * 10))
    assert (response.status_code, response.get_json()["code"]) == (403, "insufficient_scope")
    register.quote("not-a-uuid", [line("1", "1.00")], expect=404)


def _fields(schema_class) -> dict:
    return schema_class().fields


def _same_shape(schema_class, body: dict, where: str = "") -> None:
    fields = _fields(schema_class)
    assert set(body) == set(fields), (where or schema_class.__name__, set(body) ^ set(fields))
    for name, field in fields.items():
        inner = field.inner if isinstance(field, ma.fields.List) else field
        if isinstance(inner, ma.fields.Nested):
            values = body[name] if isinstance(field, ma.fields.List) else [body[name]]
            for value in values:
                _same_shape(type(inner.schema), value, f"{where}.{name}")


def test_responses_are_the_documented_schemas(register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer, "R-9", cashier={"externalId": "C", "name": "Olga"})
    _same_shape(CheckoutSessionResponse, session)
    quote = register.quote(session["id"], [line("1", "100.00", sku="X")])
    _same_shape(QuoteResponse, quote)
    _same_shape(HoldResponse, register.hold(session["id"], quote["id"]))
    sale = register.commit(session["id"], quote["id"])
    _same_shape(SaleResponse, sale)
    _same_shape(SaleLookupResponse, register.lookup("R-9"))
    _same_shape(ReturnResponse, register.return_lines(sale["id"], [("1", "1")]))


def test_the_interface_document_names_the_checkout_schemas(client):
    spec = client.get("/openapi.json").get_json()
    names = set(spec["components"]["schemas"])
    assert {"CreateCheckoutSessionRequest", "CheckoutSessionResponse", "CreateQuoteRequest",
            "QuoteResponse", "CreateHoldRequest", "ReleaseHoldRequest", "HoldResponse",
            "CommitSaleRequest", "SaleResponse", "SaleLookupResponse", "CreateReturnRequest",
            "ReturnResponse"} <= names
    quote = spec["paths"]["/v1/checkout-sessions/{checkout_session_id}/quote"]["post"]
    assert quote["x-scope"] == "checkout:write" and quote["responses"]["201"]
    lookup = spec["paths"]["/v1/sales/by-external-receipt/{external_receipt_id}"]["get"]
    [receipt] = [p for p in lookup["parameters"] if p["name"] == "external_receipt_id"]
    assert receipt["in"] == "path" and receipt["required"] is True
    assert receipt["schema"] == {"type": "string", "minLength": 1, "maxLength": 128}
