import marshmallow as ma

from app.api.base import Schema
from app.api.fields import Percent, Timestamp


class CompanyResponse(Schema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    createdAt = Timestamp(attribute="created_at", required=True)


class ProgramResponse(Schema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    currency = ma.fields.Constant("RUB", required=True)
    accrualPercent = Percent(attribute="accrual_bp", required=True)
    maxRedeemPercent = Percent(attribute="max_redeem_bp", required=True)
    accrualDelayDays = ma.fields.Integer(attribute="accrual_delay_days", required=True)
    holdTtlSeconds = ma.fields.Integer(attribute="hold_ttl_seconds", required=True)
    enrollmentRequiresOtp = ma.fields.Boolean(attribute="enrollment_requires_otp", required=True)
    clawbackPolicy = ma.fields.String(attribute="clawback_policy", required=True)
    pointsLifetimeDays = ma.fields.Integer(
        attribute="points_lifetime_days", required=True, allow_none=True,
        metadata={"description": "Days a credit's points live (1..3650); null: they never expire"})
    expiryReminderDays = ma.fields.Integer(
        attribute="expiry_reminder_days", required=True, allow_none=True,
        metadata={"description": "Days before expiry that reward.expiring is sent (1..90); "
                                 "null: never"})


class SubscriptionResponse(Schema):
    tariff = ma.fields.String(required=True)
    registerLimit = ma.fields.Integer(attribute="register_limit", required=True)
    activeTerminals = ma.fields.Integer(attribute="active_terminals", required=True)
    status = ma.fields.String(required=True)
    accessFrom = Timestamp(attribute="access_from", required=True)
    accessUntil = Timestamp(attribute="access_until", allow_none=True)
