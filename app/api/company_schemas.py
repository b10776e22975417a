import marshmallow as ma

from app.api.base import Schema
from app.api.fields import MAX_AMOUNT, Amount, JsonBoolean, Percent, Text, Timestamp
from app.services.rewards import tiers
from app.services.tenancy.companies import CLAWBACK_POLICIES


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
    clawbackPolicy = ma.fields.String(attribute="clawback_policy", required=True,
                                      metadata={"enum": list(CLAWBACK_POLICIES)})
    welcomeBonus = Amount(required=True, metadata={"description": "Credited at enrolment"})
    birthdayBonus = Amount(required=True, metadata={
        "description": "Credited once a year on the birthday (Europe/Moscow)"})
    tiers = ma.fields.List(ma.fields.Nested(lambda: TierSetting()), required=True,
                           metadata={"description": "By minSpend; empty: no tiers"})
    tierWindowDays = ma.fields.Integer(allow_none=True, required=True, metadata={
        "description": "Days of sales a customer's spend counts; null: all time"})


class TierSetting(Schema):
    name = Text(maximum=50, required=True)
    minSpend = Amount(minimum=0, maximum=MAX_AMOUNT, required=True)
    accrualPercent = Percent(required=True)


class UpdateProgramRequest(Schema):
    """Any of the program's settings; at least one."""

    accrualPercent = Percent()
    maxRedeemPercent = Percent()
    accrualDelayDays = ma.fields.Integer(strict=True, validate=ma.validate.Range(0, 3650))
    holdTtlSeconds = ma.fields.Integer(strict=True, validate=ma.validate.Range(30, 86400))
    enrollmentRequiresOtp = JsonBoolean()
    clawbackPolicy = ma.fields.String(validate=ma.validate.OneOf(CLAWBACK_POLICIES))
    welcomeBonus = Amount(minimum=0, maximum=MAX_AMOUNT)
    birthdayBonus = Amount(minimum=0, maximum=MAX_AMOUNT)
    tiers = ma.fields.List(ma.fields.Nested(TierSetting()),
                           validate=ma.validate.Length(max=tiers.MOST_TIERS))
    tierWindowDays = ma.fields.Integer(strict=True, allow_none=True,
                                       validate=ma.validate.Range(1, 3650))

    @ma.validates_schema
    def _at_least_one(self, data, **_kwargs):
        if not data:
            raise ma.ValidationError("give at least one setting to change")

    @ma.validates_schema  # once every tier is well formed (skipped on field errors)
    def _a_tier_list(self, data, **_kwargs):
        problem = tiers.tiers_problem([tiers.Tier(item["name"], item["minSpend"],
                                                  item["accrualPercent"])
                                       for item in data.get("tiers", [])])
        if problem:
            raise ma.ValidationError(problem, "tiers")


class SubscriptionResponse(Schema):
    tariff = ma.fields.String(required=True)
    registerLimit = ma.fields.Integer(attribute="register_limit", required=True)
    activeTerminals = ma.fields.Integer(attribute="active_terminals", required=True)
    status = ma.fields.String(required=True)
    accessFrom = Timestamp(attribute="access_from", required=True)
    accessUntil = Timestamp(attribute="access_until", allow_none=True)
