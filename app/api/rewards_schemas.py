import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.customers_schemas import RewardBalance
from app.api.enums import Choice
from app.api.fields import Text
from app.api.fields import Amount, Timestamp
from app.api.paging import offset_page_schema
from app.services.rewards.ledger import ENTRY_STATUSES, ENTRY_TYPES


def _not_zero(value):
    if value == 0:
        raise ma.ValidationError("must not be zero: positive credits, negative debits")


class RewardAccountResponse(ResponseSchema):
    customerId = ma.fields.String(attribute="customer_id", required=True)
    available = Amount(required=True)
    pending = Amount(required=True)
    reserved = Amount(required=True)
    updatedAt = Timestamp(attribute="updated_at", required=True)


class RewardAdjustmentRequest(Schema):
    amount = Amount(required=True, validate=_not_zero,
                    metadata={"description": "Positive credits (active at once), negative debits"})
    basis = Text(maximum=500, required=True, metadata={"description": "Why: mandatory"})


class RewardAdjustmentResponse(ResponseSchema):
    """Dumped from {"entry", "balance"}."""

    id = ma.fields.String(attribute="entry.id", required=True)
    customerId = ma.fields.String(attribute="entry.customer_id", required=True)
    amount = Amount(attribute="entry.amount", required=True)
    basis = ma.fields.String(attribute="entry.basis", required=True)
    balance = ma.fields.Nested(RewardBalance, required=True)
    createdAt = Timestamp(attribute="entry.created_at", required=True)


class RewardActivity(ResponseSchema):
    id = ma.fields.String(required=True)
    type = Choice("ActivityType", ENTRY_TYPES, required=True)
    amount = Amount(required=True)
    status = Choice("ActivityStatus", ENTRY_STATUSES, required=True)
    availableAt = Timestamp(attribute="available_at", allow_none=True)
    basis = ma.fields.String(allow_none=True)
    saleId = ma.fields.String(attribute="sale_id", allow_none=True)
    returnId = ma.fields.String(attribute="return_id", allow_none=True)
    createdAt = Timestamp(attribute="created_at", required=True)


RewardActivityPageResponse = offset_page_schema(RewardActivity, "RewardActivityPageResponse")
