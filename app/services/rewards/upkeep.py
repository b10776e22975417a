"""The periodic job's share of expiry (CONTRACT §14): accounts whose lots have come due, or
whose reminders have, a batch at a time.

A batch is picked and locked by one statement that skips any account a register holds right
now (the next batch or run takes it), so the job never waits on the register; its lots come
in one more statement, and its writes go with the commit: the caller commits each batch, so
no account stays locked longer than one batch's work.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.orm import Session

from app.services.rewards import expiry, ledger
from app.services.rewards.account import ACCOUNTS, LOCKED_COLUMNS
from app.services.rewards.lots import LOTS, OPEN_LOTS, Lot
from app.services.unit_of_work import UnitOfWork

_DUE = (select(*LOCKED_COLUMNS)
        .where(or_(and_(ACCOUNTS.c.next_expiry_at <= bindparam("now"), ACCOUNTS.c.available > 0),
                   ACCOUNTS.c.next_reminder_at <= bindparam("now")))
        .limit(bindparam("limit"))
        .with_for_update(of=ACCOUNTS, skip_locked=True))
_LOTS_OF = (select(LOTS.c.company_id, LOTS.c.customer_id, *OPEN_LOTS.selected_columns)
            .where(LOTS.c.company_id.in_(bindparam("companies", expanding=True)),
                   LOTS.c.customer_id.in_(bindparam("customers", expanding=True)),
                   LOTS.c.remaining > 0))


def expire_due_accounts(session: Session, now: datetime, limit: int) -> int:
    """Lock up to `limit` accounts with lots due to expire (and points to lose) or reminders
    due, expire and remind as a touch would; returns how many accounts were handled. The
    caller commits."""
    work = UnitOfWork.of(session)
    rows = [row for row in work.run(_DUE, {"now": now, "limit": limit}).all()
            if (row.company_id, row.customer_id) not in work.accounts]
    if not rows:
        return 0
    held: dict[tuple[str, str], list[Lot]] = {(row.company_id, row.customer_id): [] for row in rows}
    for company_id, customer_id, *lot in work.run(_LOTS_OF, {
            "companies": sorted({row.company_id for row in rows}),
            "customers": [row.customer_id for row in rows]}):
        if (company_id, customer_id) in held:
            held[(company_id, customer_id)].append(Lot(*lot))
    for row in rows:
        account = ledger.adopt(work, row)
        account.lots = held[(row.company_id, row.customer_id)]
        ledger.mature_due(work, account, now)
        expiry.expire_due(work, account, now)
    return len(rows)
