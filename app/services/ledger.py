"""The reward ledger: the only code that changes a balance.

Balances (kopecks) on the account are a cache of the ledger, always changed with an entry,
under a row lock on the account, so concurrent holds and debits serialise:
    available = Σ ACTIVE entries − reserved
    pending   = Σ PENDING entries
    reserved  = Σ amounts of ACTIVE holds
PENDING entries mature to ACTIVE at `available_at`, on first touch of the account (so
correctness never waits for the scheduler) and by a periodic job.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, case, func, or_, select, update
from sqlalchemy.orm import Session

from app.models import Hold, LedgerEntry, RewardAccount
from app.services.errors import Conflict, NotFound

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


def post(session: Session, account: RewardAccount, *, type: str, amount: int, now: datetime,
         status: str = "ACTIVE", available_at: datetime | None = None, basis: str | None = None,
         sale_id: str | None = None, return_id: str | None = None, hold_id: str | None = None,
         from_reserved: bool = False) -> LedgerEntry:
    """Write one entry and move the balance with it. `from_reserved` takes an ACTIVE debit
    out of the reservation (capturing a hold) instead of the available balance."""
    if type not in ENTRY_TYPES:
        raise ValueError(f"unknown entry type {type}")
    entry = LedgerEntry(company_id=account.company_id, customer_id=account.customer_id, type=type,
                        amount=amount, status=status, available_at=available_at or now, basis=basis,
                        sale_id=sale_id, return_id=return_id, hold_id=hold_id, created_at=now)
    session.add(entry)
    if status == "PENDING":
        account.pending += amount
        if account.next_maturity_at is None or entry.available_at < account.next_maturity_at:
            account.next_maturity_at = entry.available_at
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


def debit_available(session: Session, account: RewardAccount, amount: int, **entry) -> LedgerEntry:
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


@dataclass(frozen=True)
class Difference:
    company_id: str
    customer_id: str
    field: str
    stored: int
    computed: int

    def __str__(self) -> str:
        return (f"{self.company_id} {self.customer_id} {self.field}: stored {self.stored}, "
                f"computed {self.computed}")


def verify(session: Session, company_id: str | None = None) -> list[Difference]:
    """Recompute every account from its entries and holds; list what disagrees. One
    set-based query, so it runs in the database even over millions of accounts."""
    entries = select(
        LedgerEntry.company_id, LedgerEntry.customer_id,
        func.sum(case((LedgerEntry.status == "ACTIVE", LedgerEntry.amount), else_=0)).label("active"),
        func.sum(case((LedgerEntry.status == "PENDING", LedgerEntry.amount), else_=0)).label("pending"),
    ).group_by(LedgerEntry.company_id, LedgerEntry.customer_id)
    holds = (select(Hold.company_id, Hold.customer_id, func.sum(Hold.amount).label("reserved"))
             .where(Hold.state == "ACTIVE").group_by(Hold.company_id, Hold.customer_id))
    accounts = select(RewardAccount)
    if company_id is not None:
        entries = entries.where(LedgerEntry.company_id == company_id)
        holds = holds.where(Hold.company_id == company_id)
        accounts = accounts.where(RewardAccount.company_id == company_id)
    entries, holds, accounts = entries.subquery(), holds.subquery(), accounts.subquery()

    def joined(sums):
        return and_(sums.c.company_id == accounts.c.company_id, sums.c.customer_id == accounts.c.customer_id)

    reserved = func.coalesce(holds.c.reserved, 0)
    computed = {"reserved": reserved, "pending": func.coalesce(entries.c.pending, 0),
                "available": func.coalesce(entries.c.active, 0) - reserved}
    rows = session.execute(
        select(accounts.c.company_id, accounts.c.customer_id,
               *(accounts.c[name] for name in computed), *computed.values())
        .outerjoin(entries, joined(entries)).outerjoin(holds, joined(holds))
        .where(or_(*(accounts.c[name] != value for name, value in computed.items())))
        .order_by(accounts.c.company_id, accounts.c.customer_id))
    differences = []
    for company, customer, *values in rows:
        stored, expected = values[:len(computed)], values[len(computed):]
        for field, was, should in zip(computed, stored, expected):
            if was != should:
                differences.append(Difference(company, customer, field, int(was), int(should)))
    return differences


def count_accounts(session: Session, company_id: str | None = None) -> int:
    query = select(func.count()).select_from(RewardAccount)
    if company_id is not None:
        query = query.where(RewardAccount.company_id == company_id)
    return session.scalar(query) or 0
