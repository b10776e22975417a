"""A customer's reward account as callers see it: balances, manual adjustments and the
ledger's history. Every balance change goes through `app.services.rewards.ledger`."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from app.models import LedgerEntry, RewardAccount
from app.services.errors import InvalidField, NotFound
from app.services.rewards import ledger
from app.services.rewards.account import Account
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event
from app.services.wire import Balance, format_amount, format_timestamp

# Balances are kept in a signed 64-bit column.
LARGEST_BALANCE = 2 ** 63 - 1


_ACCOUNT = select(RewardAccount).where(RewardAccount.company_id == bindparam("company_id"),
                                       RewardAccount.customer_id == bindparam("customer_id"))
_ACTIVITIES = (select(LedgerEntry)
               .where(LedgerEntry.company_id == bindparam("company_id"),
                      LedgerEntry.customer_id == bindparam("customer_id"))
               .order_by(LedgerEntry.created_at.desc(), LedgerEntry.id.desc())
               .offset(bindparam("offset")).limit(bindparam("limit")))
_ACTIVITY_COUNT = (select(func.count()).select_from(LedgerEntry)
                   .where(LedgerEntry.company_id == bindparam("company_id"),
                          LedgerEntry.customer_id == bindparam("customer_id")))


def fresh(session: Session, account: RewardAccount, now: datetime) -> RewardAccount | Account:
    """The account read with whatever has come due matured (first touch: it is locked only
    when something is due)."""
    if account.next_maturity_at is not None and account.next_maturity_at <= now:
        return ledger.lock(UnitOfWork.of(session), account.company_id, account.customer_id, now)
    return account


def get_account(session: Session, company_id: str, customer_id: str,
                now: datetime) -> RewardAccount | Account:
    account = session.scalar(_ACCOUNT, {"company_id": company_id, "customer_id": customer_id})
    if account is None:
        raise NotFound("customer")
    return fresh(session, account, now)


def adjust(session: Session, company_id: str, customer_id: str, *, amount: int, basis: str,
           now: datetime) -> tuple[dict, Account]:
    """A manual credit (ACTIVE at once) or debit (never beyond the available balance: 409
    insufficient_balance), as one ADJUSTMENT entry under the account's row lock. The entry
    comes back as the values of its row."""
    if amount == 0:
        raise ValueError("an adjustment is not zero")
    account = ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
    if amount > 0:
        if account.available + amount > LARGEST_BALANCE:
            raise InvalidField(["body", "amount"], "the balance would exceed the largest amount kept",
                               "value_too_large")
        entry = ledger.post(account, type="ADJUSTMENT", amount=amount, now=now, basis=basis)
    else:
        entry = ledger.debit_available(account, -amount, type="ADJUSTMENT", now=now, basis=basis)
    record_event(session, company_id, "reward.adjusted", adjustment_as_json(entry, account))
    return entry, account


def adjustment_as_json(entry: dict, account: Account) -> dict:
    """The adjustment as RewardAdjustmentResponse shows it."""
    return {"id": entry["id"], "customerId": entry["customer_id"],
            "amount": format_amount(entry["amount"]), "basis": entry["basis"],
            "balance": Balance.of(account).as_json(),
            "createdAt": format_timestamp(entry["created_at"])}


def activities(session: Session, company_id: str, customer_id: str, *, offset: int, limit: int,
               now: datetime) -> tuple[list[LedgerEntry], int]:
    """One page of the customer's ledger, newest first, and the number of entries."""
    get_account(session, company_id, customer_id, now)  # 404 for a stranger; matures what is due
    ids = {"company_id": company_id, "customer_id": customer_id}
    entries = list(session.scalars(_ACTIVITIES, {**ids, "offset": offset, "limit": limit}))
    total = (offset + len(entries) if entries and len(entries) < limit
             else session.scalar(_ACTIVITY_COUNT, ids))
    return entries, total
