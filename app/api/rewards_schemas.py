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


class ExpiringPoints(ResponseSchema):
    amount = Amount(required=True)
    expiresAt = Timestamp(attribute="expires_at", required=True)


def _shown(description: str, example: str = "150.00") -> ma.fields.String:
    """A value the service has already formatted (app/services/rewards/tiers.py)."""
    return ma.fields.String(required=True, metadata={"description": description, "example": example})


class NextTierResponse(ResponseSchema):
    name = ma.fields.String(required=True)
    minSpend = _shown("The spend that reaches it")
    remaining = _shown("What is left to spend to reach it")


class TierStandingResponse(ResponseSchema):
    name = ma.fields.String(required=True)
    accrualPercent = _shown("Replaces the program's accrual percent for this customer", "7.00")
    spend = _shown("Σ of what the customer paid over the program's tier window, less returns")
    next = ma.fields.Nested(NextTierResponse, required=True, allow_none=True)


class RewardAccountResponse(ResponseSchema):
    """Dumped from an AccountStanding (app/services/rewards/accounts.py)."""

    customerId = ma.fields.String(attribute="account.customer_id", required=True)
    available = Amount(attribute="account.available", required=True)
    pending = Amount(attribute="account.pending", required=True)
    reserved = Amount(attribute="account.reserved", required=True)
    updatedAt = Timestamp(attribute="account.updated_at", required=True)
    tier = ma.fields.Nested(TierStandingResponse, required=True, allow_none=True,
                            metadata={"description": "null when the program has no tiers"})
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


class RewardAdjustmentResponse(ResponseSchema):
    """Dumped from {"entry", "balance"}."""

    id = ma.fields.String(attribute="entry.id", required=True)
    customerId = ma.fields.String(attribute="entry.customer_id", required=True)
    amount = Amount(attribute="entry.amount", required=True)
    basis = ma.fields.String(attribute="entry.basis", required=True)
    balance = ma.fields.Nested(RewardBalance, required=True)
    createdAt = Timestamp(attribute="entry.created_at", required=True)


class ActivityAuthor(ResponseSchema):
    kind = Choice("AuthorKind", ("STAFF", "CREDENTIAL", "OPERATOR"), required=True)
    name = ma.fields.String(required=True, allow_none=True)


class RewardActivity(ResponseSchema):
    id = ma.fields.String(required=True)
    type = Choice("ActivityType", ENTRY_TYPES, required=True)
    amount = Amount(required=True)
    status = Choice("ActivityStatus", ENTRY_STATUSES, required=True)
    availableAt = Timestamp(attribute="available_at", allow_none=True)
    basis = ma.fields.String(allow_none=True)
    saleId = ma.fields.String(attribute="sale_id", allow_none=True)
    returnId = ma.fields.String(attribute="return_id", allow_none=True)
    expiresAt = Timestamp(attribute="expires_at", allow_none=True, metadata={
        "description": "When the credit's points expire (its lot's); null for other entries"})
    author = ma.fields.Nested(ActivityAuthor, allow_none=True, metadata={
        "description": "Who made an adjustment: a staff member in the back office, an API "
                       "key, or the operator; null for what the service did itself"})
    createdAt = Timestamp(attribute="created_at", required=True)


RewardActivityPageResponse = offset_page_schema(RewardActivity, "RewardActivityPageResponse")
