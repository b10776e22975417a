import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.checkout_schemas import MAX_LINES, SaleResponse, text
from app.api.customers_schemas import RewardBalance
from app.api.enums import Choice
from app.api.fields import Amount, Quantity, Timestamp, no_nul
from app.models.checkout import SALE_STATES


class SaleLookupPath(Schema):
    external_receipt_id = ma.fields.String(required=True,
                                           validate=[ma.validate.Length(1, 128), no_nul])


class SaleLookupResponse(SaleResponse):
    pass


class ReturnLineRequest(Schema):
    line_id = text("lineId", maximum=128, required=True)
    quantity = Quantity(required=True)


class CreateReturnRequest(Schema):
    lines = ma.fields.List(ma.fields.Nested(ReturnLineRequest), required=True,
                           validate=ma.validate.Length(1, MAX_LINES))


class ReturnLineResponse(ResponseSchema):
    lineId = ma.fields.String(attribute="line_id", required=True)
    quantity = Quantity(required=True)
    restoredRedemption = Amount(attribute="restored_redemption", required=True)
    reversedAccrual = Amount(attribute="reversed_accrual", required=True)


class ReturnResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    saleId = ma.fields.String(attribute="sale_id", required=True)
    customerId = ma.fields.String(attribute="customer_id", required=True)
    lines = ma.fields.List(ma.fields.Nested(ReturnLineResponse), required=True)
    restoredRedemption = Amount(attribute="restored_redemption", required=True, metadata={
        "description": "Bonuses spent on the receipt, given back"})
    reversedAccrual = Amount(attribute="reversed_accrual", required=True, metadata={
        "description": "Bonuses earned on the receipt, actually taken back"})
    forgivenAccrual = Amount(attribute="forgiven_accrual", required=True, metadata={
        "description": "Earned bonuses the clawback policy let the customer keep"})
    saleState = Choice("SaleState", SALE_STATES, attribute="sale_state", required=True)
    balance = ma.fields.Nested(RewardBalance, required=True)
    createdAt = Timestamp(attribute="created_at", required=True)
