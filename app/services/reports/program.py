"""The program's figures over a period (docs/api.md#reports): whether the program and its campaigns
pay, for the marketer."""
from __future__ import annotations

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from app.models import Campaign, Customer, Program, RewardAccount, Sale, SaleLine
from app.services.reports.periods import Period, as_int, snapshot
from app.services.rewards import tiers as tier_rules

_SALES, _LINES, _ACCOUNTS = Sale.__table__, SaleLine.__table__, RewardAccount.__table__


def program_figures(session: Session, company_id: str, period: Period, *,
                    timeout_seconds: int | None = None) -> dict:
    """Kopecks and counts; `average_check` and the others are worked out by `half_up` and
    `rate` at the edge's request, from the sums here."""
    snapshot(session, timeout_seconds)
    return {**_sales(session, company_id, period), "tiers": _tiers(session, company_id),
            "campaigns": _campaigns(session, company_id, _in_period(company_id, period))}


def sales_figures(session: Session, company_id: str, period: Period, *,
                  timeout_seconds: int | None = None) -> dict:
    """The program report's figures without its tiers and campaigns: the period's
    enrolments and sales alone, which is all the dashboard shows (the campaigns' lines are
    most of the report's time at a large company)."""
    snapshot(session, timeout_seconds)
    return _sales(session, company_id, period)


def _in_period(company_id: str, period: Period) -> tuple:
    return (_SALES.c.company_id == company_id, _SALES.c.committed_at >= period.start,
            _SALES.c.committed_at < period.end)


def _sales(session: Session, company_id: str, period: Period) -> dict:
    in_period = _in_period(company_id, period)
    enrolments = session.scalar(select(func.count()).select_from(Customer).where(
        Customer.company_id == company_id, Customer.created_at >= period.start,
        Customer.created_at < period.end))
    sales, loyalty, active, amount, loyalty_amount, accrued, redeemed = session.execute(
        select(func.count(), func.count(_SALES.c.customer_id),
               func.count(_SALES.c.customer_id.distinct()),
               func.sum(_SALES.c.total_amount - _SALES.c.redeemed),
               func.sum(case((_SALES.c.customer_id.is_not(None),
                              _SALES.c.total_amount - _SALES.c.redeemed))),
               func.sum(_SALES.c.accrued), func.sum(_SALES.c.redeemed))
        .where(*in_period)).one()
    return {"enrolments": enrolments, "active_customers": active, "sales": sales,
            "loyalty_sales": loyalty,
            "average_check": half_up(as_int(amount), sales),
            "average_loyalty_check": half_up(as_int(loyalty_amount), loyalty),
            "accrued": as_int(accrued), "redeemed": as_int(redeemed),
            "redemption_rate": rate(as_int(redeemed), as_int(accrued))}


def half_up(total: int, count: int) -> int | None:
    """total ÷ count to the kopeck, half up; None without a count."""
    if not count:
        return None
    quotient, remainder = divmod(total, count)
    return quotient + (1 if 2 * remainder >= count else 0)


def rate(part: int, whole: int) -> int | None:
    """part ÷ whole in ten-thousandths, half up (None when whole is 0)."""
    return half_up(part * 10_000, whole) if whole else None


def _tiers(session: Session, company_id: str) -> list[dict]:
    """Customers by their tier now: the spend their account holds (the periodic job recounts it
    as old sales leave the window), on the program's thresholds."""
    stored = session.scalar(select(Program.tiers).where(Program.company_id == company_id))
    tiers = tier_rules.from_stored(stored or "[]")
    if not tiers:
        return []
    bounds = [tier.min_spend for tier in tiers[1:]] + [None]
    counts = session.execute(select(*[
        func.count(case((and_(_ACCOUNTS.c.spend >= tier.min_spend,
                              *([_ACCOUNTS.c.spend < upper] if upper is not None else [])), 1)))
        for tier, upper in zip(tiers, bounds)]).where(_ACCOUNTS.c.company_id == company_id)).one()
    return [{"name": tier.name, "customers": count} for tier, count in zip(tiers, counts)]


def _campaigns(session: Session, company_id: str, in_period) -> list[dict]:
    """The campaigns that gave a line its percent in the period: their sales and what those
    lines accrued, by name.

    The period's sales are found first, on their own (a materialized CTE): left to itself the
    planner walks every campaign line the company ever had and looks its sale up by key, a
    random read of the sales table per line (9 s at the contract's size), where the period's
    sales hashed against the campaign lines' index is about 1 s."""
    campaigns = Campaign.__table__
    period_sales = select(_SALES.c.id).where(*in_period).cte("period_sales") \
        .prefix_with("MATERIALIZED")
    rows = session.execute(
        select(_LINES.c.campaign_id, campaigns.c.name, func.count(_LINES.c.sale_id.distinct()),
               func.sum(_LINES.c.accrual))
        .select_from(period_sales.join(_LINES, _LINES.c.sale_id == period_sales.c.id)
                     .join(campaigns, (campaigns.c.company_id == _LINES.c.company_id)
                           & (campaigns.c.id == _LINES.c.campaign_id)))
        .where(_LINES.c.company_id == company_id, _LINES.c.campaign_id.is_not(None))
        .group_by(_LINES.c.campaign_id, campaigns.c.name)).all()
    return [{"campaign_id": campaign_id, "name": name, "sales": sales, "accrued": as_int(accrued)}
            for campaign_id, name, sales, accrued in sorted(rows, key=lambda row: (row[1], row[0]))]
