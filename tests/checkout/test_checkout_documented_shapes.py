"""The register's responses are built by hand (app.services.checkout.resources, for speed)
and declared again as schemas for the interface document: each response must load, strictly,
with the schema its operation documents, so the two cannot drift apart."""
import marshmallow as ma
import pytest

from app.api.checkout_schemas import (CheckoutSessionResponse, HoldResponse, QuoteResponse,
                                      SaleResponse)
from app.api.sales_schemas import ReturnResponse, SaleLookupResponse
from tests.checkout.conftest import line

RECEIPT = [line("1", "100.00", sku="A"), line("2", "55.55", sku="B"), line("3", "10.00", sku="C")]


def conforms(schema: ma.Schema, body: dict) -> dict:
    """Loads with unknown keys refused, required keys demanded, every field validated."""
    try:
        return schema.load(body, unknown=ma.RAISE)
    except ma.ValidationError as error:
        pytest.fail(f"{type(schema).__name__}: {error.messages}")


@pytest.mark.parametrize("restricted", [False, True], ids=["redeeming", "restricted"])
def test_every_register_response_is_what_the_document_says(shop, register, restricted):
    shop.catalog({"A": (True, True), "B": (True, False), "C": (False, True)})
    customer = shop.customer("0.00" if restricted else "500.00")
    receipt = "R-shape-restricted" if restricted else "R-shape"
    session = register.open(customer, receipt, cashier={"externalId": "C1", "name": "Olga"})
    conforms(CheckoutSessionResponse(), session)
    quote = register.quote(session["id"], RECEIPT)
    conforms(QuoteResponse(), quote)
    assert quote["redemption"]["allowed"] is not restricted
    if not restricted:
        hold = register.hold(session["id"], quote["id"])
        conforms(HoldResponse(), hold)
        conforms(HoldResponse(), register.release(session["id"], "changed mind"))
        conforms(HoldResponse(), register.hold(session["id"], quote["id"]))
    sale = register.commit(session["id"], quote["id"])
    conforms(SaleResponse(), sale)
    conforms(SaleLookupResponse(), register.lookup(receipt))
    conforms(ReturnResponse(), register.return_lines(sale["id"], [("1", "1")]))
    emptied = register.return_lines(sale["id"], [("2", "1"), ("3", "1")])
    conforms(ReturnResponse(), emptied)
