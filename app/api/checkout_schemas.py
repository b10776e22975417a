"""Checkout requests (loaded into snake_case dicts for the services) and responses.

Responses are the services' resources sent as they are (app/services/checkout/resources.py);
the response schemas here document those shapes for the interface document.
"""
import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.enums import Choice
from app.api.fields import MAX_AMOUNT, Amount, Percent, Quantity, Timestamp, no_nul
from app.models.checkout import HOLD_STATES, SALE_STATES, SESSION_STATES
from app.services.rewards.bounds import BALANCE_BOUND
from app.wire import format_amount

MAX_LINES = 1000
RESTRICTION_REASONS = ("SUBSCRIPTION_INACTIVE", "NO_BALANCE", "NO_REDEEMABLE_LINES",
                       "TERMINAL_INACTIVE")


def text(data_key: str | None = None, *, minimum: int = 1, maximum: int | None = None, **kwargs):
    return ma.fields.String(data_key=data_key,
                            validate=[ma.validate.Length(minimum, maximum), no_nul], **kwargs)


def money_field(data_key: str | None = None, *, minimum: int = 0, **kwargs) -> Amount:
    return Amount(data_key=data_key, minimum=minimum, maximum=MAX_AMOUNT, **kwargs)


OPTIONAL = {"allow_none": True, "load_default": None}


# Requests

class CheckoutCashier(Schema):
    """Safe data only: a PIN, phone or tax number is an unknown field (422)."""

    external_id = text("externalId", maximum=128, required=True)
    name = text(maximum=200, required=True)


class CreateCheckoutSessionRequest(Schema):
    external_receipt_id = text("externalReceiptId", maximum=128, required=True)
    customer_id = text("customerId", required=True)
    terminal_id = text("terminalId", maximum=128, **OPTIONAL)
    store_id = text("storeId", maximum=128, **OPTIONAL)
    cashier = ma.fields.Nested(CheckoutCashier, **OPTIONAL)


class QuoteLineRequest(Schema):
    line_id = text("lineId", maximum=128, required=True)
    sku = text(maximum=64, **OPTIONAL)
    name = text(minimum=0, maximum=255, **OPTIONAL)
    quantity = Quantity(required=True)
    price = money_field(required=True)
    amount = money_field(required=True, metadata={
        "description": "What the line costs before bonuses, after the register's own discounts"})


class CreateQuoteRequest(Schema):
    lines = ma.fields.List(ma.fields.Nested(QuoteLineRequest), required=True,
                           validate=ma.validate.Length(1, MAX_LINES))
    redeem_amount = money_field("redeemAmount", **OPTIONAL, metadata={
        "description": "Caps the redemption (default: the most allowed)"})

    @ma.validates_schema
    def _a_receipt(self, data, **kwargs):
        problem = receipt_lines_problem(data["lines"])
        if problem:
            raise ma.ValidationError(problem, "lines")


def receipt_lines_problem(lines: list[dict]) -> str | None:
    """What is wrong with a receipt's lines as a whole, if anything."""
    line_ids = [line["line_id"] for line in lines]
    if len(set(line_ids)) != len(line_ids):
        return "lineIds must be unique in a receipt"
    # Each line is bounded, but a thousand of them are not: no account holds more than the
    # bound, and no receipt totals more.
    if sum(line["amount"] for line in lines) > BALANCE_BOUND:
        return f"the lines total more than {format_amount(BALANCE_BOUND)}"
    return None


class CreateHoldRequest(Schema):
    quote_id = text("quoteId", maximum=128, required=True)
    amount = money_field(minimum=1, **OPTIONAL,
                         metadata={"description": "Default: the quote's discount"})


class ReleaseHoldRequest(Schema):
    reason = text(minimum=0, maximum=200, **OPTIONAL)


class CommitSaleRequest(Schema):
    quote_id = text("quoteId", maximum=128, required=True)


# Responses (documentation of the resources' shapes)

class CheckoutSessionResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    externalReceiptId = ma.fields.String(attribute="external_receipt_id", required=True)
    customerId = ma.fields.String(attribute="customer_id", required=True)
    terminalId = ma.fields.String(attribute="terminal_id", required=True, allow_none=True)
    storeId = ma.fields.String(attribute="store_id", required=True, allow_none=True)
    cashierId = ma.fields.String(attribute="cashier_id", required=True, allow_none=True)
    state = Choice("CheckoutSessionState", SESSION_STATES, required=True)
    expiresAt = Timestamp(attribute="expires_at", required=True,
                          metadata={"description": "createdAt + 24 h"})
    createdAt = Timestamp(attribute="created_at", required=True)


class QuoteLineResponse(ResponseSchema):
    lineId = ma.fields.String(attribute="line_id", required=True)
    amount = Amount(required=True)
    redeemable = Amount(required=True)
    discount = Amount(required=True)
    accrual = Amount(required=True)
    restriction = Choice("LineRestriction", ["ITEM_NOT_REDEEMABLE"], required=True, allow_none=True)
    accrualPercent = Percent(attribute="accrual_bp", required=True, metadata={
        "description": "The customer's (tier, else program) or a campaign's, the larger"})
    campaignId = ma.fields.String(attribute="campaign_id", required=True, allow_none=True,
                                  metadata={"description": "The campaign that gave the percent"})


class QuoteRedemption(ResponseSchema):
    allowed = ma.fields.Boolean(required=True)
    restrictionReason = Choice("RedemptionRestriction", RESTRICTION_REASONS,
                               attribute="restriction_reason", required=True, allow_none=True)


class QuoteResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    checkoutSessionId = ma.fields.String(attribute="checkout_session_id", required=True)
    lines = ma.fields.List(ma.fields.Nested(QuoteLineResponse), required=True)
    totalAmount = Amount(attribute="total_amount", required=True)
    redeemable = Amount(required=True)
    discount = Amount(required=True)
    accrual = Amount(required=True)
    redemption = ma.fields.Nested(QuoteRedemption, required=True)  # QuoteResource.redemption
    createdAt = Timestamp(attribute="created_at", required=True)


class HoldResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    checkoutSessionId = ma.fields.String(attribute="checkout_session_id", required=True)
    customerId = ma.fields.String(attribute="customer_id", required=True)
    amount = Amount(required=True)
    state = Choice("HoldState", HOLD_STATES, required=True)
    expiresAt = Timestamp(attribute="expires_at", required=True)
    createdAt = Timestamp(attribute="created_at", required=True)
    releasedAt = Timestamp(attribute="released_at", required=True, allow_none=True)


class SaleLineResponse(ResponseSchema):
    lineId = ma.fields.String(attribute="line_id", required=True)
    sku = ma.fields.String(required=True, allow_none=True)
    quantity = Quantity(required=True)
    amount = Amount(required=True)
    discount = Amount(required=True)
    accrual = Amount(required=True)
    returnedQuantity = Quantity(attribute="returned_quantity", required=True, allow_zero=True,
                                metadata={"description": "Returned so far; 0.000 until a return"})
    accrualPercent = Percent(attribute="accrual_bp", required=True, allow_none=True, metadata={
        "description": "null on sales committed before percents were kept per line"})
    campaignId = ma.fields.String(attribute="campaign_id", required=True, allow_none=True)


class SaleResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    checkoutSessionId = ma.fields.String(attribute="checkout_session_id", required=True,
                                         allow_none=True,
                                         metadata={"description": "null for a sale made offline"})
    externalReceiptId = ma.fields.String(attribute="external_receipt_id", required=True)
    customerId = ma.fields.String(attribute="customer_id", required=True)
    state = Choice("SaleState", SALE_STATES, required=True)
    totalAmount = Amount(attribute="total_amount", required=True)
    redeemed = Amount(required=True)
    accrued = Amount(required=True)
    accrualAvailableAt = Timestamp(attribute="accrual_available_at", required=True)
    lines = ma.fields.List(ma.fields.Nested(SaleLineResponse), required=True)
    receiptText = ma.fields.List(ma.fields.String(), attribute="receipt_text", required=True,
                                 metadata={"description": "Lines of at most 40 characters to "
                                           "print: redeemed, accrued, balance after"})
    committedAt = Timestamp(attribute="committed_at", required=True,
                            metadata={"description": "When the service received the sale"})
    offline = ma.fields.Boolean(required=True, metadata={
        "description": "Made while the register could not reach the service, sent later"})
    soldAt = Timestamp(attribute="sold_at", required=True, metadata={
        "description": "When the register made the sale: committedAt for an online sale"})
