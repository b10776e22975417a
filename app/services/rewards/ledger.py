"""The reward ledger: the only code that changes a balance.

Balances (kopecks) on the account are a cache of the ledger, always changed with an entry,
under a row lock on the account, so concurrent holds and debits serialise:
    available = Σ ACTIVE entries − reserved
    pending   = Σ PENDING entries
    reserved  = Σ amounts of ACTIVE holds
PENDING entries mature to ACTIVE at `available_at`, on first touch of the account (so
correctness never waits for the scheduler) and by a periodic job.

Two ways to hold an account, one set of rules: `lock_account` gives the ORM object (the
unit of work writes it), `lock` gives a `LockedAccount` read and written with statements
built once (`save` writes its entries and balances): the register's path, where an ORM load
and flush cost more than the rest of the request.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, event, func, insert, select, update
from sqlalchemy.orm import Session

from app.models import LedgerEntry, RewardAccount
from app.models.base import new_id
from app.services.errors import Conflict, NotFound
from app.statements import defer, run

ENTRY_TYPES = ("ACCRUAL", "REDEMPTION", "ADJUSTMENT", "REDEMPTION_RESTORE", "ACCRUAL_REVERSAL", "EXPIRY")


def open_account(session: Session, company_id: str, customer_id: str, now: datetime) -> RewardAccount:
    account = RewardAccount(company_id=company_id, customer_id=customer_id, available=0, pending=0,
                            reserved=0, updated_at=now)
    session.add(account)
    return account


def lock_account(session: Session, company_id: str, customer_id: str, now: datetime) -> RewardAccount:
    """The account under a row lock (FOR UPDATE on PostgreSQL; SQLite's write transaction
    is already exclusive), with whatever has come due matured."""
    account = session.scalar(
        select(RewardAccount)
        .where(RewardAccount.company_id == company_id, RewardAccount.customer_id == customer_id)
        .with_for_update()
        .execution_options(populate_existing=True))
    if account is None:
        raise NotFound("customer")
    mature_due(session, account, now)
    return account


@dataclass(eq=False)
class LockedAccount:
    """An account under its row lock, as plain values: post, reserve, unreserve and
    mature_due move it as they move a RewardAccount; `save` writes what they did."""

    company_id: str
    customer_id: str
    available: int
    pending: int
    reserved: int
    next_maturity_at: datetime | None
    updated_at: datetime
    new_entries: list[dict] = field(default_factory=list)


_ACCOUNTS = RewardAccount.__table__
_LOCK = (select(_ACCOUNTS.c.company_id, _ACCOUNTS.c.customer_id, _ACCOUNTS.c.available,
                _ACCOUNTS.c.pending, _ACCOUNTS.c.reserved, _ACCOUNTS.c.next_maturity_at,
                _ACCOUNTS.c.updated_at)
         .where(_ACCOUNTS.c.company_id == bindparam("company_id"),
                _ACCOUNTS.c.customer_id == bindparam("customer_id"))
         .with_for_update())
_SAVE = (update(_ACCOUNTS)
         .where(_ACCOUNTS.c.company_id == bindparam("b_company_id"),
                _ACCOUNTS.c.customer_id == bindparam("b_customer_id"))
         .values(available=bindparam("b_available"), pending=bindparam("b_pending"),
                 reserved=bindparam("b_reserved"), next_maturity_at=bindparam("b_next_maturity_at"),
                 updated_at=bindparam("b_updated_at")))
_INSERT_ENTRIES = insert(LedgerEntry.__table__)
_UNSAVED = "ledger_unsaved_accounts"


def lock(session: Session, company_id: str, customer_id: str, now: datetime) -> LockedAccount:
    """`lock_account` without the ORM: one statement, the same lock, the same maturing.
    The caller must `save` it before the transaction commits (a commit refuses otherwise)."""
    row = run(session, _LOCK, {"company_id": company_id, "customer_id": customer_id}).first()
    if row is None:
        raise NotFound("customer")
    account = LockedAccount(*row)
    session.info.setdefault(_UNSAVED, set()).add(account)
    mature_due(session, account, now)
    return account


def save(session: Session, account: LockedAccount) -> None:
    """Write the account's new entries and its balances, with the transaction's next round
    trip (they are deferred: nothing here waits on their outcome)."""
    if account.new_entries:
        defer(session, _INSERT_ENTRIES, account.new_entries)
        account.new_entries = []
    defer(session, _SAVE, {
        "b_company_id": account.company_id, "b_customer_id": account.customer_id,
        "b_available": account.available, "b_pending": account.pending,
        "b_reserved": account.reserved, "b_next_maturity_at": account.next_maturity_at,
        "b_updated_at": account.updated_at})
    session.info.get(_UNSAVED, set()).discard(account)


@event.listens_for(Session, "before_commit")
def _refuse_unsaved(session: Session) -> None:
    if session.info.get(_UNSAVED):
        raise RuntimeError("a locked account was changed but not saved")


@event.listens_for(Session, "after_rollback")
def _forget_unsaved(session: Session) -> None:
    session.info.pop(_UNSAVED, None)


def post(session: Session, account: RewardAccount, *, type: str, amount: int, now: datetime,
         status: str = "ACTIVE", available_at: datetime | None = None, basis: str | None = None,
         sale_id: str | None = None, return_id: str | None = None, hold_id: str | None = None,
         from_reserved: bool = False) -> LedgerEntry | None:
    """Write one entry and move the balance with it. `from_reserved` takes an ACTIVE debit
    out of the reservation (capturing a hold) instead of the available balance. The entry
    comes back for an ORM account; a LockedAccount's are plain values that `save` writes."""
    if type not in ENTRY_TYPES:
        raise ValueError(f"unknown entry type {type}")
    values = {"company_id": account.company_id, "customer_id": account.customer_id, "type": type,
              "amount": amount, "status": status, "available_at": available_at or now,
              "basis": basis, "sale_id": sale_id, "return_id": return_id, "hold_id": hold_id,
              "created_at": now}
    entry = None
    if isinstance(account, LockedAccount):
        values["id"] = new_id()
        account.new_entries.append(values)
    else:
        entry = LedgerEntry(**values)
        session.add(entry)
    if status == "PENDING":
        account.pending += amount
        if account.next_maturity_at is None or values["available_at"] < account.next_maturity_at:
            account.next_maturity_at = values["available_at"]
    elif status == "ACTIVE":
        if from_reserved:
            if -amount > account.reserved:
                raise ValueError("capturing more than is reserved")
            account.reserved += amount
        else:
            account.available += amount
    else:
        raise ValueError(f"an entry is posted PENDING or ACTIVE, not {status}")
    account.updated_at = now
    return entry


def debit_available(session: Session, account: RewardAccount, amount: int, **entry) -> LedgerEntry | None:
    """A debit that may not take the balance below zero: 409 insufficient_balance."""
    if amount > account.available:
        raise Conflict("the available balance is too small", code="insufficient_balance")
    return post(session, account, amount=-amount, **entry)


def reserve(account: RewardAccount, amount: int, now: datetime) -> None:
    if amount <= 0:
        raise ValueError("a reservation is positive")
    if amount > account.available:
        raise Conflict("the available balance is too small", code="insufficient_balance")
    account.available -= amount
    account.reserved += amount
    account.updated_at = now


def unreserve(account: RewardAccount, amount: int, now: datetime) -> None:
    if amount > account.reserved:
        raise ValueError("releasing more than is reserved")
    account.reserved -= amount
    account.available += amount
    account.updated_at = now


def mature_due(session: Session, account: RewardAccount, now: datetime) -> int:
    """Turn PENDING entries whose time has come ACTIVE; returns the kopecks matured."""
    if account.next_maturity_at is None or account.next_maturity_at > now:
        return 0
    due = (LedgerEntry.company_id == account.company_id,
           LedgerEntry.customer_id == account.customer_id,
           LedgerEntry.status == "PENDING", LedgerEntry.available_at <= now)
    # int(): PostgreSQL sums bigint as numeric, which would turn the balances into Decimals.
    amount = int(session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)).where(*due)) or 0)
    session.execute(update(LedgerEntry).where(*due).values(status="ACTIVE")
                    .execution_options(synchronize_session=False))
    account.pending -= amount
    account.available += amount
    account.next_maturity_at = session.scalar(select(func.min(LedgerEntry.available_at)).where(
        LedgerEntry.company_id == account.company_id, LedgerEntry.customer_id == account.customer_id,
        LedgerEntry.status == "PENDING"))
    account.updated_at = now
    return amount


def accounts_due(session: Session, now: datetime, limit: int = 500) -> list[tuple[str, str]]:
    """(company_id, customer_id) of accounts with something to mature, for the periodic job."""
    return [(company_id, customer_id) for company_id, customer_id in session.execute(
        select(RewardAccount.company_id, RewardAccount.customer_id)
        .where(RewardAccount.next_maturity_at <= now).limit(limit))]


def due_amounts(session: Session, company_id: str, customer_ids: list[str], now: datetime) -> dict[str, int]:
    """Pending kopecks that have come due but are not matured yet, by customer: lets a reader
    of many accounts show them as a touch would, without locking each."""
    if not customer_ids:
        return {}
    rows = session.execute(
        select(LedgerEntry.customer_id, func.sum(LedgerEntry.amount))
        .where(LedgerEntry.company_id == company_id, LedgerEntry.customer_id.in_(customer_ids),
               LedgerEntry.status == "PENDING", LedgerEntry.available_at <= now)
        .group_by(LedgerEntry.customer_id))
    return {customer_id: int(total) for customer_id, total in rows}
