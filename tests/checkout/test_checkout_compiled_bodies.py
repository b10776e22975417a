"""The register's bodies loaded by functions built once from their schemas (app.api.compiled)
give what the schema's own load gives, or leave the body to the schema: never another value,
never a body the schema refuses."""
from __future__ import annotations

import marshmallow as ma
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.api.checkout_schemas import (CommitSaleRequest, CreateCheckoutSessionRequest,
                                      CreateHoldRequest, CreateQuoteRequest, ReleaseHoldRequest)
from app.api.compiled import ASK_THE_SCHEMA, compile_loader

SCHEMAS = (CreateCheckoutSessionRequest, CreateQuoteRequest, CreateHoldRequest,
           ReleaseHoldRequest, CommitSaleRequest)
KEYS = ("externalReceiptId", "customerId", "terminalId", "storeId", "cashier", "externalId",
        "name", "lines", "lineId", "sku", "quantity", "price", "amount", "redeemAmount",
        "quoteId", "reason", "companyId")
TEXTS = st.one_of(st.sampled_from(["", " ", "a\x00b", "x" * 64, "x" * 65, "x" * 129,
                                   "x" * 201, "x" * 256, "R-1", "Чек"]),
                  st.text(max_size=8))
NUMBERS = st.sampled_from(["1", "0", "-1", "0.345", "1.0001", "150.00", "1.5", "abc",
                           "100000000000.00", "100000000000.01", "99999999999999999999",
                           " 1", "1e3", "NaN"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False),
                    TEXTS, NUMBERS)


def _bodies():
    def objects(values):
        return st.dictionaries(st.sampled_from(KEYS), values, max_size=7)
    return st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        objects(inner)), max_leaves=20)


def _line():
    return st.fixed_dictionaries(
        {"lineId": st.sampled_from(["1", "2", "", "x" * 129]), "quantity": NUMBERS,
         "price": NUMBERS, "amount": NUMBERS},
        optional={"sku": st.one_of(st.none(), TEXTS), "name": st.one_of(st.none(), TEXTS),
                  "other": SCALARS})


NEAR_VALID = {
    CreateCheckoutSessionRequest: st.fixed_dictionaries(
        {"externalReceiptId": TEXTS, "customerId": TEXTS},
        optional={"terminalId": st.one_of(st.none(), TEXTS), "storeId": st.one_of(st.none(), TEXTS),
                  "cashier": st.one_of(st.none(), st.fixed_dictionaries(
                      {"externalId": TEXTS, "name": TEXTS}, optional={"pin": TEXTS}))}),
    CreateQuoteRequest: st.fixed_dictionaries(
        {"lines": st.lists(_line(), max_size=4)},
        optional={"redeemAmount": st.one_of(st.none(), NUMBERS, st.integers())}),
    CreateHoldRequest: st.fixed_dictionaries(
        {"quoteId": TEXTS}, optional={"amount": st.one_of(st.none(), NUMBERS)}),
    ReleaseHoldRequest: st.fixed_dictionaries({}, optional={"reason": st.one_of(st.none(), TEXTS)}),
    CommitSaleRequest: st.fixed_dictionaries({"quoteId": st.one_of(st.none(), TEXTS)}),
}


@pytest.mark.parametrize("schema_class", SCHEMAS, ids=lambda s: s.__name__)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_compiled_load_is_the_schemas_load_or_leaves_the_body_to_it(schema_class, data):
    schema = schema_class()
    loader = compile_loader(schema)
    assert loader is not None
    body = data.draw(st.one_of(NEAR_VALID[schema_class], _bodies()))
    try:
        expected = schema.load(body)
    except ma.ValidationError:
        expected = ASK_THE_SCHEMA
    loaded = loader(body)
    assert loaded is ASK_THE_SCHEMA or loaded == expected, (body, loaded, expected)
    if expected is not ASK_THE_SCHEMA and isinstance(body, dict) and "lines" not in body:
        assert loaded == expected  # the plain bodies of an open, a hold, a commit: never unsure
