"""The periodic job's share of expiry (CONTRACT §14): accounts whose lots have come due, or
whose reminders have, a batch at a time.

A batch is picked and locked by one statement that skips any account a register holds right
now (the next batch or run takes it), so the job never waits on the register; its lots come
in one more statement, and its writes in a few more, each for the whole batch (on
PostgreSQL: one multi-row insert per table, one update per table from arrays). The caller
commits each batch, so no account stays locked longer than one batch's work.

On PostgreSQL a batch commits without waiting for its WAL to reach the disk
(synchronous_commit off): a crash may lose the last batches, which the next run makes again,
and any transaction that saw them commits durably, which flushes them too.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session

from app.services.rewards import account as accounts
from app.services.rewards import expiry, ledger
from app.services.rewards.account import ACCOUNTS, LOCKED_COLUMNS
from app.services.rewards.lots import LOTS, OPEN_LOTS, Lot
from app.services.unit_of_work import UnitOfWork



def _due(moment, *more):
    """Accounts whose `moment` has come, soonest first: read along its partial index, never
    the whole table, however many accounts there are."""
    return (select(*LOCKED_COLUMNS).where(moment <= bindparam("now"), *more)
            .order_by(moment).limit(bindparam("limit"))
            .with_for_update(of=ACCOUNTS, skip_locked=True))


_DUE = (_due(ACCOUNTS.c.next_expiry_at, ACCOUNTS.c.available > 0),
        _due(ACCOUNTS.c.next_reminder_at))
_LOTS_OF = (select(LOTS.c.company_id, LOTS.c.customer_id, *OPEN_LOTS.selected_columns)
            .where(LOTS.c.company_id.in_(bindparam("companies", expanding=True)),
                   LOTS.c.customer_id.in_(bindparam("customers", expanding=True)),
                   LOTS.c.remaining > 0))


_NO_FLUSH_WAIT = text("SET LOCAL synchronous_commit = off")


def _from_arrays(table: str, keys: dict[str, str], values: dict[str, str]):
    """UPDATE of many rows at once from one array per column (PostgreSQL), fed by the rows
    of an Account's per-row update, whose parameters are named b_<column>."""
    columns = {**keys, **values}
    arrays = ", ".join(f"CAST(:b_{name} AS {kind}[])" for name, kind in columns.items())
    return text(f"UPDATE {table} AS t SET {', '.join(f'{n} = v.{n}' for n in values)} "
                f"FROM unnest({arrays}) AS v({', '.join(columns)}) "
                f"WHERE {' AND '.join(f't.{n} = v.{n}' for n in keys)}")


_MONEY, _MOMENT = "bigint", "timestamptz"
_BULK_UPDATES = {
    accounts.SAVE_LOT: _from_arrays("reward_lots", {"company_id": "varchar", "id": "varchar"},
                                    {"remaining": _MONEY, "remind_at": _MOMENT}),
    accounts.SAVE: _from_arrays(
        "reward_accounts", {"company_id": "varchar", "customer_id": "varchar"},
        {"available": _MONEY, "pending": _MONEY, "reserved": _MONEY, "next_maturity_at": _MOMENT,
         "updated_at": _MOMENT, "spend": _MONEY, "spend_oldest_at": _MOMENT,
         "birthday_due_on": "date", "next_expiry_at": _MOMENT, "next_reminder_at": _MOMENT}),
}


def expire_due_accounts(session: Session, now: datetime, limit: int) -> int:
    """Lock up to `limit` accounts with lots due to expire (and points to lose) or reminders
    due, expire and remind as a touch would; returns how many accounts were handled. The
    caller commits."""
    work = UnitOfWork.of(session)
    if work.postgresql:
        work.defer(_NO_FLUSH_WAIT, {})
    rows = []
    for due in _DUE:  # expiries first, then reminders, as many as the batch still takes
        if len(rows) < limit:
            rows += [row for row in work.run(due, {"now": now, "limit": limit - len(rows)}).all()
                     if (row.company_id, row.customer_id) not in work.accounts
                     and all(row.customer_id != taken.customer_id for taken in rows)]
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
        account.lots, account.lots_complete = held[(row.company_id, row.customer_id)], True
        ledger.mature_due(work, account, now)
        expiry.expire_due(work, account, now)
    _write_in_bulk(work)
    return len(rows)


def _write_in_bulk(work: UnitOfWork) -> None:
    """The batch's writes (its accounts' and its events'), one statement per kind of row."""
    kinds: dict = {}
    for account in work.accounts.values():
        for statement, params in account.writes():
            kinds.setdefault(statement, []).extend(params if isinstance(params, list) else [params])
    for statement, params in work.deferred:
        kinds.setdefault(statement, []).extend(params if isinstance(params, list) else [params])
    work.deferred = []
    for statement, rows in kinds.items():
        bulk = _BULK_UPDATES.get(statement) if work.postgresql else None
        if bulk is not None:
            work.connection.execute(bulk, {name: [row[name] for row in rows] for name in rows[0]})
        else:  # inserts: one multi-row statement each (SQLAlchemy's insertmanyvalues)
            work.connection.execute(statement, rows)
