import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.enums import Choice
from app.api.fields import MAX_AMOUNT, Amount, JsonBoolean, Percent, Text, Timestamp
from app.services.checkout.offline import LONGEST_WINDOW_DAYS as LONGEST_OFFLINE_SALE_WINDOW_DAYS
from app.services.rewards import tiers
from app.services.rewards.tiers import Tier
from app.services.tenancy import companies
from app.services.tenancy.companies import CLAWBACK_POLICIES, SUBSCRIPTION_STATUSES
from app.wire import CURRENCIES


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
    welcomeBonus = Amount(required=True, metadata={"description": "Credited at enrolment"})
    birthdayBonus = Amount(required=True, metadata={
        "description": "Credited once a year on the birthday (Europe/Moscow)"})
    tiers = ma.fields.List(ma.fields.Nested(lambda: TierResponse()), required=True,
                           metadata={"description": "By minSpend; empty: no tiers"})
    tierWindowDays = ma.fields.Integer(allow_none=True, required=True, metadata={
        "description": "Days of sales a customer's spend counts; null: all time"})
    pointsLifetimeDays = ma.fields.Integer(
        attribute="points_lifetime_days", required=True, allow_none=True,
        metadata={"description": "Days a credit's points live (1..3650); null: they never expire"})
    expiryReminderDays = ma.fields.Integer(
        attribute="expiry_reminder_days", required=True, allow_none=True,
        metadata={"description": "Days before expiry that reward.expiring is sent (1..90); "
                                 "null: never"})
    offlineSaleWindowDays = ma.fields.Integer(
        attribute="offline_sale_window_days", required=True,
        metadata={"description": "How many days back a register may send a sale it made "
                                 "offline (0..30); 0: offline sales are refused"})


class TierResponse(ResponseSchema):
    name = ma.fields.String(required=True)
    minSpend = Amount(required=True)
    accrualPercent = Percent(required=True)


class TierSetting(Schema):
    name = Text(maximum=50, required=True, metadata={"example": "Gold"})
    minSpend = Amount(minimum=0, maximum=MAX_AMOUNT, required=True)
    accrualPercent = Percent(required=True)


class UpdateProgramRequest(Schema):
    """Any of the program's settings; at least one."""

    accrualPercent = Percent()
    maxRedeemPercent = Percent()
    accrualDelayDays = ma.fields.Integer(strict=True, validate=ma.validate.Range(0, 3650))
    holdTtlSeconds = ma.fields.Integer(strict=True, validate=ma.validate.Range(30, 86400),
                                       metadata={"example": 900})
    enrollmentRequiresOtp = JsonBoolean()
    clawbackPolicy = Choice("ClawbackPolicy", CLAWBACK_POLICIES)
    welcomeBonus = Amount(minimum=0, maximum=MAX_AMOUNT)
    birthdayBonus = Amount(minimum=0, maximum=MAX_AMOUNT)
    tiers = ma.fields.List(ma.fields.Nested(TierSetting()),
                           validate=ma.validate.Length(max=tiers.MOST_TIERS), metadata={
                               "description": 'Up to 10; one with minSpend "0.00"; distinct '
                                              "names and minSpends; [] for no tiers",
                               "example": [
                                   {"name": "Base", "minSpend": "0.00", "accrualPercent": "5.00"},
                                   {"name": "Gold", "minSpend": "50000.00",
                                    "accrualPercent": "10.00"}]})
    tierWindowDays = ma.fields.Integer(strict=True, allow_none=True,
                                       validate=ma.validate.Range(1, 3650),
                                       metadata={"example": 365})
    pointsLifetimeDays = ma.fields.Integer(strict=True, allow_none=True,
                                           validate=ma.validate.Range(1, 3650),
                                           metadata={"description": "null: points never expire",
                                                     "example": 365})
    expiryReminderDays = ma.fields.Integer(strict=True, allow_none=True,
                                           validate=ma.validate.Range(1, 90),
                                           metadata={"description": "null: no reward.expiring",
                                                     "example": 7})
    offlineSaleWindowDays = ma.fields.Integer(
        strict=True, validate=ma.validate.Range(0, LONGEST_OFFLINE_SALE_WINDOW_DAYS),
        metadata={"description": "0: offline sales are refused", "example": 7})

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


class SubscriptionResponse(ResponseSchema):
    tariff = ma.fields.String(required=True)
    registerLimit = ma.fields.Integer(attribute="register_limit", required=True)
    activeTerminals = ma.fields.Integer(attribute="active_terminals", required=True)
    status = Choice("SubscriptionStatus", SUBSCRIPTION_STATUSES, required=True)
    accessFrom = Timestamp(attribute="access_from", required=True)
    accessUntil = Timestamp(attribute="access_until", allow_none=True)


def program_changes(body: dict) -> dict:
    """UpdateProgramRequest's loaded body as `change_program`'s keywords: only what is given,
    and null kept as a value where it means something (points never expire, no reminder)."""
    changes = {"accrual_bp": body.get("accrualPercent"),
               "max_redeem_bp": body.get("maxRedeemPercent"),
               "accrual_delay_days": body.get("accrualDelayDays"),
               "hold_ttl_seconds": body.get("holdTtlSeconds"),
               "enrollment_requires_otp": body.get("enrollmentRequiresOtp"),
               "clawback_policy": body.get("clawbackPolicy"),
               "welcome_bonus": body.get("welcomeBonus"),
               "birthday_bonus": body.get("birthdayBonus"),
               "offline_sale_window_days": body.get("offlineSaleWindowDays")}
    if "tiers" in body:
        changes["tier_list"] = [Tier(item["name"], item["minSpend"], item["accrualPercent"])
                                for item in body["tiers"]]
    for name, setting in (("pointsLifetimeDays", "points_lifetime_days"),
                          ("expiryReminderDays", "expiry_reminder_days")):
        if name in body:  # null is a value here: points never expire, no reminder
            changes[setting] = companies.NULL if body[name] is None else body[name]
    if "tierWindowDays" in body:
        changes["tier_window_days"] = body["tierWindowDays"]
    return changes
