"""The request of a sale made offline; its answer is a SaleResponse."""
import marshmallow as ma

from app.api.base import Schema
from app.api.checkout_schemas import (MAX_LINES, OPTIONAL, CheckoutCashier, QuoteLineRequest,
                                      receipt_lines_problem, text)
from app.api.customers_schemas import Phone
from app.api.fields import Timestamp

_WAYS = ("customerId", "phone", "cardNumber")


class OfflineSaleCustomer(Schema):
    """Exactly one way of naming the customer, as the register knew them."""

    customer_id = text("customerId", maximum=128, **OPTIONAL)
    phone = Phone(**OPTIONAL)
    card_number = text("cardNumber", maximum=13, **OPTIONAL, metadata={
        "description": "The number on the customer's wallet card (its barcode)",
        "example": "2000000000008"})

    @ma.validates_schema
    def _one_way(self, data, **_kwargs):
        given = [name for name, value in data.items() if value is not None]
        if len(given) != 1:
            raise ma.ValidationError(f"name the customer exactly one way: {', '.join(_WAYS)}")


class CreateOfflineSaleRequest(Schema):
    external_receipt_id = text("externalReceiptId", maximum=128, required=True)
    sold_at = Timestamp(data_key="soldAt", required=True, metadata={
        "description": "When the register made the sale, with its offset "
                       "(RFC 3339); at most 5 minutes ahead of the service's clock",
        "example": "2026-11-28T14:03:00+03:00"})
    customer = ma.fields.Nested(OfflineSaleCustomer, required=True)
    cashier = ma.fields.Nested(CheckoutCashier, **OPTIONAL)
    lines = ma.fields.List(ma.fields.Nested(QuoteLineRequest), required=True,
                           validate=ma.validate.Length(1, MAX_LINES))

    @ma.validates_schema
    def _a_receipt(self, data, **_kwargs):
        problem = receipt_lines_problem(data["lines"])
        if problem:
            raise ma.ValidationError(problem, "lines")
