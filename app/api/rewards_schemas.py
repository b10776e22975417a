import marshmallow as ma

from app.api.base import Schema
from app.api.customers_schemas import RewardBalance
from app.api.fields import Text
from app.api.fields import Amount, Timestamp
from app.api.paging import offset_page_schema


def _not_zero(value):
    if value == 0:
        raise ma.ValidationError("must not be zero: positive credits, negative debits")


class ExpiringPoints(Schema):
    amount = Amount(required=True)
    expiresAt = Timestamp(attribute="expires_at", required=True)


class RewardAccountResponse(Schema):
    customerId = ma.fields.String(attribute="customer_id", required=True)
    available = Amount(required=True)
    pending = Amount(required=True)
    reserved = Amount(required=True)
    updatedAt = Timestamp(attribute="updated_at", required=True)
    expiring = ma.fields.List(ma.fields.Nested(ExpiringPoints), required=True, metadata={
        "description": "Up to 5 next moments at which points would expire, with how many "
                       "would, soonest first"})


class RewardAdjustmentRequest(Schema):
    amount = Amount(required=True, validate=_not_zero,
                    metadata={"description": "Positive credits (active at once), negative debits"})
    basis = Text(maximum=500, required=True, metadata={"description": "Why: mandatory"})
    expiresAt = Timestamp(metadata={"description": "Promotional points: when this credit's "
                                                   "points expire (later than now, at most 10 "
                                                   "years ahead; only with a positive amount)"})


class RewardAdjustmentResponse(Schema):
    """Dumped from {"entry", "balance"}."""

    id = ma.fields.String(attribute="entry.id", required=True)
    customerId = ma.fields.String(attribute="entry.customer_id", required=True)
    amount = Amount(attribute="entry.amount", required=True)
    basis = ma.fields.String(attribute="entry.basis", required=True)
    balance = ma.fields.Nested(RewardBalance, required=True)
    createdAt = Timestamp(attribute="entry.created_at", required=True)


class RewardActivity(Schema):
    id = ma.fields.String(required=True)
    type = ma.fields.String(required=True)
    amount = Amount(required=True)
    status = ma.fields.String(required=True)
    availableAt = Timestamp(attribute="available_at", allow_none=True)
    basis = ma.fields.String(allow_none=True)
    saleId = ma.fields.String(attribute="sale_id", allow_none=True)
    returnId = ma.fields.String(attribute="return_id", allow_none=True)
    expiresAt = Timestamp(attribute="expires_at", allow_none=True, metadata={
        "description": "When the credit's points expire (its lot's); null for other entries"})
    createdAt = Timestamp(attribute="created_at", required=True)


RewardActivityPageResponse = offset_page_schema(RewardActivity, "RewardActivityPageResponse")
