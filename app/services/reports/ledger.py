"""The ledger's movements by Moscow day or month (docs/api.md#reports): the accountant's monthly
close, and what every customer's activity history, summed, shows."""
from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import LedgerEntry
from app.services.reports.periods import Period, as_int, moscow_period, snapshot, utc_hour

# Each entry type's column; signed as written (credits positive, debits negative).
COLUMNS = {"ACCRUAL": "accrued", "REDEMPTION": "redeemed", "REDEMPTION_RESTORE": "restored",
           "ADJUSTMENT": "adjusted", "BONUS": "bonuses", "EXPIRY": "expired",
           "ACCRUAL_REVERSAL": "clawed_back"}
FIELDS = ("accrued", "matured", "redeemed", "restored", "adjusted", "bonuses", "expired",
          "clawed_back")

_ENTRIES = LedgerEntry.__table__
# Born PENDING: an accrual with a delay, or the reversal of a pending one. An entry posted
# ACTIVE has its availableAt at its createdAt.
_BORN_PENDING = _ENTRIES.c.available_at > _ENTRIES.c.created_at


def ledger_movements(session: Session, company_id: str, period: Period,
                     unit: str, *, timeout_seconds: int | None = None) -> list[dict]:
    """One item per day (or month) of the period, in order, each with its `period` key and
    the kopecks of every field. An entry counts in the period of its createdAt; `matured` is
    what became ACTIVE from PENDING, in the period of its availableAt (the moment it counts as
    available), once its status says so."""
    snapshot(session, timeout_seconds)
    items = {key: dict.fromkeys(FIELDS, 0) for key in period.keys(unit)}
    within = (_ENTRIES.c.company_id == company_id,)
    created = utc_hour(_ENTRIES.c.created_at).label("hour")
    hours = (select(created, _ENTRIES.c.type, func.sum(_ENTRIES.c.amount).label("amount"))
             .where(*within, _ENTRIES.c.created_at >= period.start,
                    _ENTRIES.c.created_at < period.end)
             .group_by(created, _ENTRIES.c.type).subquery())
    for key, type, amount in session.execute(_by_period(hours, unit, hours.c.type)):
        items[key][COLUMNS[type]] += as_int(amount)
    available = utc_hour(_ENTRIES.c.available_at).label("hour")
    hours = (select(available, func.sum(_ENTRIES.c.amount).label("amount"))
             .where(*within, _BORN_PENDING, _ENTRIES.c.status == "ACTIVE",
                    _ENTRIES.c.available_at >= period.start, _ENTRIES.c.available_at < period.end)
             .group_by(available).subquery())
    for key, amount in session.execute(_by_period(hours, unit)):
        items[key]["matured"] += as_int(amount)
    return [{"period": key, **sums} for key, sums in items.items()]


def _by_period(hours, unit: str, *columns):
    """The hourly sums summed again by Moscow day or month (and `columns`)."""
    key = moscow_period(hours.c.hour, unit)
    return select(key, *columns, func.sum(hours.c.amount)).group_by(key, *columns)
