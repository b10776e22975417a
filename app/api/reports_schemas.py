"""The reports' query parameters and answers (docs/api.md#reports)."""
from __future__ import annotations

from datetime import date

import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.enums import Choice
from app.api.fields import Amount, CalendarDate, Timestamp
from app.services.reports.periods import DAY, MONTH, MOST_DAYS, Period
from app.services.reports.registers import GROUPS

# Days whose Moscow midnights, and the day after's, are moments Python and the databases hold.
FIRST_DAY, LAST_DAY = date(1900, 1, 1), date(9998, 12, 31)
_DAY_RANGE = ma.validate.Range(min=FIRST_DAY, max=LAST_DAY)
_DATE = {"description": "A calendar day in Europe/Moscow, YYYY-MM-DD, included "
                        f"({FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()})",
         "example": "2026-05-01"}


class PeriodArgs(Schema):
    """`from` and `to`, Moscow days, both included, at most 366 days."""

    class Meta:
        # The API refuses a parameter it does not know before this loads (refuse_unknown_query,
        # app/api/base.py); the back office loads its page's whole query, `lang` and the
        # form's other fields included, with this same schema (app/portal/report_runs.py).
        unknown = ma.EXCLUDE

    from_ = CalendarDate(data_key="from", required=True, validate=_DAY_RANGE, metadata=_DATE)
    to = CalendarDate(required=True, validate=_DAY_RANGE,
                        metadata={**_DATE, "example": "2026-05-31"})

    @ma.validates_schema
    def _a_period(self, data, **_kwargs):
        if "from_" not in data or "to" not in data:
            return
        if data["to"] < data["from_"]:
            raise ma.ValidationError("must not be before from", "to")
        if (data["to"] - data["from_"]).days + 1 > MOST_DAYS:
            raise ma.ValidationError(f"a period is at most {MOST_DAYS} days, both ends counted", "to")

    @ma.post_load
    def _period(self, data, **_kwargs):
        return {**data, "period": Period(data.pop("from_"), data.pop("to"))}


class LedgerReportArgs(PeriodArgs):
    groupBy = Choice("LedgerGrouping", (DAY, MONTH), attribute="group_by", load_default=DAY,
                     metadata={"description": "One item per Moscow day or month"})


class RegisterReportArgs(PeriodArgs):
    groupBy = Choice("RegisterGrouping", GROUPS, attribute="group_by", load_default="store",
                     metadata={"description": "One item per store, terminal, cashier or Moscow day"})
    storeId = ma.fields.String(attribute="store", metadata={"description": "Only this store's sales"})
    terminalId = ma.fields.String(attribute="terminal",
                                  metadata={"description": "Only this terminal's sales"})
    cashierId = ma.fields.String(attribute="cashier",
                                 metadata={"description": "Only this cashier's sales"})


class ExpiringMonth(ResponseSchema):
    month = ma.fields.String(required=True, metadata={"example": "2026-05"})
    amount = Amount(required=True)


class LiabilityReport(ResponseSchema):
    asOf = Timestamp(attribute="as_of", required=True)
    available = Amount(required=True)
    pending = Amount(required=True)
    reserved = Amount(required=True)
    accounts = ma.fields.Integer(required=True, metadata={
        "description": "Accounts with an available balance above zero"})
    expiring = ma.fields.List(ma.fields.Nested(ExpiringMonth), required=True, metadata={
        "description": "12 Moscow months, the current one first: what would expire in each "
                       "if nothing were spent"})
    neverExpires = Amount(attribute="never_expires", required=True, metadata={
        "description": "The lots' remaining that expires in none of the 12 months"})


class LedgerPeriod(ResponseSchema):
    period = ma.fields.String(required=True, metadata={
        "description": "YYYY-MM-DD or YYYY-MM (Moscow)", "example": "2026-05-01"})
    accrued = Amount(required=True)
    matured = Amount(required=True, metadata={"description": "What became ACTIVE from PENDING"})
    redeemed = Amount(required=True, metadata={"description": "Negative"})
    restored = Amount(required=True)
    adjusted = Amount(required=True, metadata={"description": "Signed"})
    bonuses = Amount(required=True)
    expired = Amount(required=True, metadata={"description": "Negative"})
    clawedBack = Amount(attribute="clawed_back", required=True, metadata={"description": "Negative"})


class LedgerReport(ResponseSchema):
    items = ma.fields.List(ma.fields.Nested(LedgerPeriod), required=True)


class RegisterGroup(ResponseSchema):
    key = ma.fields.String(required=True, allow_none=True, metadata={
        "description": "The store, terminal or cashier id (null: sales without one), or the date"})
    name = ma.fields.String(required=True, allow_none=True)
    sales = ma.fields.Integer(required=True)
    loyaltySales = ma.fields.Integer(attribute="loyalty_sales", required=True)
    offlineSales = ma.fields.Integer(attribute="offline_sales", required=True, metadata={
        "description": "Those made while the register was offline, counted at their soldAt"})
    amount = Amount(required=True, metadata={"description": "Σ of the lines' amount − discount"})
    discount = Amount(required=True, metadata={"description": "Bonuses redeemed"})
    accrued = Amount(required=True)
    returns = ma.fields.Integer(required=True)
    returnedAmount = Amount(attribute="returned_amount", required=True, metadata={
        "description": "The money the returns refunded (their lines' amount − discount)"})
    clawedBack = Amount(attribute="clawed_back", required=True, metadata={
        "description": "The bonuses the returns took back (positive)"})


class RegisterReport(ResponseSchema):
    items = ma.fields.List(ma.fields.Nested(RegisterGroup), required=True)


class TierCount(ResponseSchema):
    name = ma.fields.String(required=True)
    customers = ma.fields.Integer(required=True)


class CampaignFigures(ResponseSchema):
    campaignId = ma.fields.String(attribute="campaign_id", required=True)
    name = ma.fields.String(required=True)
    sales = ma.fields.Integer(required=True)
    accrued = Amount(required=True)


class ProgramReport(ResponseSchema):
    enrolments = ma.fields.Integer(required=True)
    activeCustomers = ma.fields.Integer(attribute="active_customers", required=True)
    sales = ma.fields.Integer(required=True)
    loyaltySales = ma.fields.Integer(attribute="loyalty_sales", required=True)
    averageCheck = Amount(attribute="average_check", required=True, allow_none=True)
    averageLoyaltyCheck = Amount(attribute="average_loyalty_check", required=True,
                                 allow_none=True)
    accrued = Amount(required=True)
    redeemed = Amount(required=True)
    redemptionRate = ma.fields.Function(
        lambda figures: _rate(figures["redemption_rate"]), required=True, allow_none=True,
        metadata={"type": "string", "example": "0.2500",
                  "description": "redeemed ÷ accrued, 4 places, half up; null: nothing accrued"})
    tiers = ma.fields.List(ma.fields.Nested(TierCount), required=True)
    campaigns = ma.fields.List(ma.fields.Nested(CampaignFigures), required=True)


def _rate(ten_thousandths: int | None) -> str | None:
    if ten_thousandths is None:
        return None
    return f"{ten_thousandths // 10_000}.{ten_thousandths % 10_000:04d}"
