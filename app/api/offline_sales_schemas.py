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


# A sale made at 14:03 Moscow time while the shop's line was down, sent at 14:41.
REQUEST_EXAMPLE = {
    "externalReceiptId": "R-2026-000187", "soldAt": "2026-11-28T14:03:00+03:00",
    "customer": {"cardNumber": "2000000000008"},
    "cashier": {"externalId": "C-07", "name": "Olga"},
    "lines": [{"lineId": "1", "sku": "MILK-1L", "name": "Milk 1 l", "quantity": "2",
               "price": "89.90", "amount": "179.80"},
              {"lineId": "2", "sku": "BREAD", "name": "Rye bread", "quantity": "1",
               "price": "55.00", "amount": "55.00"}]}
RESPONSE_EXAMPLE = {
    "id": "0d3c9f4e-58b1-4a27-9c6e-2f8a7b1d5e90", "checkoutSessionId": None,
    "externalReceiptId": "R-2026-000187", "customerId": "6f1c2b9e-3d4a-4f5b-8c7d-9e0f1a2b3c4d",
    "state": "COMMITTED", "totalAmount": "234.80", "redeemed": "0.00", "accrued": "11.74",
    "accrualAvailableAt": "2026-12-12T11:03:00Z",
    "lines": [{"lineId": "1", "sku": "MILK-1L", "quantity": "2.000", "amount": "179.80",
               "discount": "0.00", "accrual": "8.99", "returnedQuantity": "0.000",
               "accrualPercent": "5.00", "campaignId": None},
              {"lineId": "2", "sku": "BREAD", "quantity": "1.000", "amount": "55.00",
               "discount": "0.00", "accrual": "2.75", "returnedQuantity": "0.000",
               "accrualPercent": "5.00", "campaignId": None}],
    "receiptText": ["Bonuses redeemed:                   0.00",
                    "Bonuses earned:                    11.74",
                    "  spendable from 12.12.2026",
                    "Bonus balance:                    340.00"],
    "committedAt": "2026-11-28T11:41:07Z", "offline": True, "soldAt": "2026-11-28T11:03:00Z"}
