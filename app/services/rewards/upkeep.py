"""The periodic job's share of expiry (docs/api.md#expiry): accounts whose lots have come due, or
whose reminders have, a batch at a time, without keeping a register waiting.

A batch is worked out before any account is locked: its accounts are read with their row
version (PostgreSQL's xmin, which every write of the row changes), their lots after them, and
the expiry applied in memory; the new rows (EXPIRY entries, events) are inserted then, since
nobody waits on them and they are most of the batch's cost. Only then one statement locks
the accounts still at the version read, skipping any a register holds; the lots' and the
accounts' updates follow in one round trip, and the caller's commit. An account that changed
or was held meanwhile loses its inserted rows and waits for the next batch, which reads it
afresh. Every write of an account's lots also writes the account, so an unchanged version
means unchanged lots. On SQLite the batch's transaction holds the database from its first
statement, so nothing can change between the read and the writes.

Accounts with accruals to mature are left to the maturing task, which runs first and expires
what it locks, as any touch does (its maturing writes could not wait for the lock).

On PostgreSQL a batch commits without waiting for its WAL to reach the disk
(synchronous_commit off): a crash may lose the last batches, which the next run makes again,
and any transaction that saw them commits durably, which flushes them too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, delete, func, literal_column, or_, select, text, tuple_
from sqlalchemy.orm import Session

from app.models import LedgerEntry, OutboxEvent
from app.services.rewards import locked_account
from app.services.rewards import expiry, ledger
from app.services.rewards.locked_account import ACCOUNTS, LOCKED_COLUMNS, Account
from app.services.rewards.lots import LOTS, OPEN_LOTS, Lot
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import RecordedEvent

_VERSION = {True: literal_column("reward_accounts.xmin::text").label("version"),
            False: literal_column("''").label("version")}  # keyed by `work.postgresql`


def _due(moment, *more):
    """Accounts whose `moment` has come, soonest first, with their row version: read along
    the moment's partial index, never the whole table, however many accounts there are."""
    return {postgresql: select(*LOCKED_COLUMNS, version).where(
                moment <= bindparam("now"), *more,
                or_(ACCOUNTS.c.next_maturity_at.is_(None),
                    ACCOUNTS.c.next_maturity_at > bindparam("now")))
            .order_by(moment).limit(bindparam("limit"))
            for postgresql, version in _VERSION.items()}


# Due lots hold more than the holds cover: only then does anything expire (lots.expire; due
# lots come first in spending order, so the reservation covers them first). Without it an
# account whose due points a hold covers would be read again by every batch while it lasts.
_UNCOVERED_DUE = select(func.coalesce(func.sum(LOTS.c.remaining), 0)).where(
    LOTS.c.company_id == ACCOUNTS.c.company_id, LOTS.c.customer_id == ACCOUNTS.c.customer_id,
    LOTS.c.remaining > 0, LOTS.c.expires_at <= bindparam("now")).scalar_subquery() \
    > ACCOUNTS.c.reserved
_DUE = (_due(ACCOUNTS.c.next_expiry_at, ACCOUNTS.c.available > 0, _UNCOVERED_DUE),
        _due(ACCOUNTS.c.next_reminder_at))
_LOTS_OF = (select(LOTS.c.company_id, LOTS.c.customer_id, *OPEN_LOTS.selected_columns)
            .where(LOTS.c.company_id.in_(bindparam("companies", expanding=True)),
                   LOTS.c.customer_id.in_(bindparam("customers", expanding=True)),
                   LOTS.c.remaining > 0))
# The accounts of the batch still at the version read, locked; the others left out.
_LOCK_UNCHANGED = text(
    "SELECT a.company_id, a.customer_id FROM reward_accounts AS a "
    "JOIN unnest(CAST(:companies AS varchar[]), CAST(:customers AS varchar[]), "
    "CAST(:versions AS xid[])) AS v(company_id, customer_id, version) "
    "ON a.company_id = v.company_id AND a.customer_id = v.customer_id AND a.xmin = v.version "
    "FOR UPDATE OF a SKIP LOCKED")
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
    locked_account.SAVE_LOT: _from_arrays("reward_lots", {"company_id": "varchar", "id": "varchar"},
                                    {"remaining": _MONEY, "remind_at": _MOMENT}),
    locked_account.SAVE: _from_arrays(
        "reward_accounts", {"company_id": "varchar", "customer_id": "varchar"},
        {"available": _MONEY, "pending": _MONEY, "reserved": _MONEY, "next_maturity_at": _MOMENT,
         "updated_at": _MOMENT, "spend": _MONEY, "spend_oldest_at": _MOMENT,
         "birthday_due_on": "date", "next_expiry_at": _MOMENT, "next_reminder_at": _MOMENT,
         "spend_window_version": "integer"}),
}
# What an account's inserted rows are undone by, should it change before its lock.
_UNDO = {table.name: table for table in (LedgerEntry.__table__, LOTS, OutboxEvent.__table__)}


@dataclass(eq=False)
class _Worked:
    """One account's expiry, worked out before its lock."""
    account: Account
    version: str
    inserts: list[tuple] = field(default_factory=list)  # (statement, row)
    updates: list[tuple] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)


def expire_due_accounts(session: Session, now: datetime, limit: int) -> int:
    """Up to `limit` accounts with lots due to expire (and points to lose) or reminders due:
    expired and reminded as a touch would; returns how many accounts were read (those left
    for the next batch included). The caller commits."""
    work = UnitOfWork.of(session)
    if work.postgresql:
        work.defer(_NO_FLUSH_WAIT, {})
    worked = [_work_out(work, row, now) for row in _read_due(work, now, limit)]
    if not worked:
        return 0
    _write(work, [insert for one in worked for insert in one.inserts])
    kept = _lock_unchanged(work, worked) if work.postgresql else worked
    _undo(work, [one for one in worked if one not in kept])
    _write(work, [update for one in kept for update in one.updates])
    return len(worked)


def _read_due(work: UnitOfWork, now: datetime, limit: int) -> list:
    """The batch's accounts, expiries first, then reminders, as many as it still takes; each
    with its lots (read after it, so a change between the two shows in its version)."""
    rows: list = []
    for due in _DUE:
        if len(rows) < limit:
            rows += [row for row in work.run(due[work.postgresql],
                                             {"now": now, "limit": limit - len(rows)}).all()
                     if all(row.customer_id != taken.customer_id for taken in rows)]
    if rows:
        held: dict[tuple[str, str], list[Lot]] = {(row.company_id, row.customer_id): []
                                                   for row in rows}
        for company_id, customer_id, *lot in work.run(_LOTS_OF, {
                "companies": sorted({row.company_id for row in rows}),
                "customers": [row.customer_id for row in rows]}):
            if (company_id, customer_id) in held:
                held[(company_id, customer_id)].append(Lot(*lot))
        rows = [(row, held[(row.company_id, row.customer_id)]) for row in rows]
    return rows


def _work_out(work: UnitOfWork, read: tuple, now: datetime) -> _Worked:
    row, lots = read
    account = ledger.adopt(work, row[:len(LOCKED_COLUMNS)])
    account.lots, account.lots_complete = lots, True
    events_before, deferred_before = len(work.events), len(work.deferred)
    expiry.expire_due(work, account, now)
    one = _Worked(account, row.version, events=work.events[events_before:])
    one.inserts = work.deferred[deferred_before:]  # the events' rows
    del work.deferred[deferred_before:]
    for statement, params in account.writes():
        rows = params if isinstance(params, list) else [params]
        kind = one.updates if statement in _BULK_UPDATES else one.inserts
        kind.extend((statement, row) for row in rows)
    return one


def _lock_unchanged(work: UnitOfWork, worked: list[_Worked]) -> list[_Worked]:
    locked = {tuple(row) for row in work.run(_LOCK_UNCHANGED, {
        "companies": [one.account.company_id for one in worked],
        "customers": [one.account.customer_id for one in worked],
        "versions": [one.version for one in worked]})}
    return [one for one in worked
            if (one.account.company_id, one.account.customer_id) in locked]


def _undo(work: UnitOfWork, changed: list[_Worked]) -> None:
    """Accounts changed (or held) since they were read: their inserted rows deleted, their
    events not handed over; the next batch reads them again."""
    if not changed:
        return
    inserted: dict[str, list[tuple[str, str]]] = {}
    for one in changed:
        for statement, row in one.inserts:
            inserted.setdefault(statement.table.name, []).append((row["company_id"], row["id"]))
        del work.accounts[(one.account.company_id, one.account.customer_id)]
    for name, keys in inserted.items():
        table = _UNDO[name]
        work.run(delete(table).where(tuple_(table.c.company_id, table.c.id).in_(keys)))
    dropped = {event.id for one in changed for event in one.events}
    work.events = [event for event in work.events if event.id not in dropped]


def _write(work: UnitOfWork, writes: list[tuple]) -> None:
    """One statement per kind of row: on PostgreSQL updates from arrays, inserts as one
    multi-row statement each (SQLAlchemy's insertmanyvalues)."""
    kinds: dict = {}
    for statement, row in writes:
        kinds.setdefault(statement, []).append(row)
    for statement, rows in kinds.items():
        bulk = _BULK_UPDATES.get(statement) if work.postgresql else None
        if bulk is not None:
            work.defer(bulk, {name: [row[name] for row in rows] for name in rows[0]})
        else:
            work.run(statement, rows)
