"""What the company owes its customers now (docs/api.md#reports): the accountant's points liability,
with what would expire month by month."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from app.models import RewardAccount, RewardLot
from app.services.reports.periods import as_int, months_from, moscow_day, moscow_midnight, snapshot

MONTHS = 12


@dataclass(frozen=True)
class Liability:
    as_of: datetime
    available: int
    pending: int
    reserved: int
    accounts: int
    expiring: list[tuple[str, int]]  # ("YYYY-MM", kopecks), the current month first
    never_expires: int


def liability(session: Session, company_id: str, now: datetime, *,
              timeout_seconds: int | None = None) -> Liability:
    """The accounts' balances as stored, and their lots' remaining by the Moscow month they
    expire in. A lot already due but not yet expired (the periodic job or a touch will) counts
    in the current month; lots beyond the twelfth month and lots that never expire are
    `never_expires`."""
    snapshot(session, timeout_seconds)
    accounts = RewardAccount.__table__
    available, pending, reserved, positive = session.execute(
        select(func.sum(accounts.c.available), func.sum(accounts.c.pending),
               func.sum(accounts.c.reserved),
               func.count(case((accounts.c.available > 0, 1))))
        .where(accounts.c.company_id == company_id)).one()
    months = months_from(moscow_day(now), MONTHS)
    expiring = dict.fromkeys(months, 0)
    rest = 0
    lots = RewardLot.__table__
    # The lot's month by its expiry against each month's first Moscow instant, bound once:
    # writing each of a million open lots' expiry out in Moscow time to read its month made
    # the report 1.0-1.3 s, against 0.7 s so. Before the next month's start: this month (or
    # due already); at or after the thirteenth's: later; no expiry: never.
    ends = [moscow_midnight(date.fromisoformat(f"{key}-01"))
            for key in months_from(moscow_day(now), MONTHS + 1)[1:]]
    month = case(*[(lots.c.expires_at < end, index) for index, end in enumerate(ends)],
                 else_=MONTHS).label("month")
    for index, remaining in session.execute(
            select(month, func.sum(lots.c.remaining))
            .where(lots.c.company_id == company_id, lots.c.remaining > 0).group_by(month)):
        if index < MONTHS:
            expiring[months[index]] += as_int(remaining)
        else:
            rest += as_int(remaining)
    return Liability(now, as_int(available), as_int(pending), as_int(reserved), positive,
                     list(expiring.items()), rest)
