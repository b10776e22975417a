import marshmallow as ma

from app.api.base import ResponseSchema
from app.api.enums import Choice
from app.api.fields import Percent, Timestamp
from app.services.tenancy.companies import CLAWBACK_POLICIES, SUBSCRIPTION_STATUSES
from app.services.wire import CURRENCIES


class CompanyResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    createdAt = Timestamp(attribute="created_at", required=True)


class ProgramResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    currency = Choice("Currency", CURRENCIES, required=True, dump_default="RUB")
    accrualPercent = Percent(attribute="accrual_bp", required=True)
    maxRedeemPercent = Percent(attribute="max_redeem_bp", required=True)
    accrualDelayDays = ma.fields.Integer(attribute="accrual_delay_days", required=True)
    holdTtlSeconds = ma.fields.Integer(attribute="hold_ttl_seconds", required=True)
    enrollmentRequiresOtp = ma.fields.Boolean(attribute="enrollment_requires_otp", required=True)
    clawbackPolicy = Choice("ClawbackPolicy", CLAWBACK_POLICIES, attribute="clawback_policy",
                            required=True)


class SubscriptionResponse(ResponseSchema):
    tariff = ma.fields.String(required=True)
    registerLimit = ma.fields.Integer(attribute="register_limit", required=True)
    activeTerminals = ma.fields.Integer(attribute="active_terminals", required=True)
    status = Choice("SubscriptionStatus", SUBSCRIPTION_STATUSES, required=True)
    accessFrom = Timestamp(attribute="access_from", required=True)
    accessUntil = Timestamp(attribute="access_until", allow_none=True)
