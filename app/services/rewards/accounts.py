"""A customer's reward account as callers see it: balances, manual adjustments and the
ledger's history. Every balance change goes through `app.services.rewards.ledger`."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from app.models import LedgerEntry, Program, RewardAccount
from app.services.errors import InvalidField, NotFound
from app.services.rewards import ledger, spend, tiers
from app.services.rewards.account import Account
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event

# Balances are kept in a signed 64-bit column.
LARGEST_BALANCE = 2 ** 63 - 1


_ACCOUNT = select(RewardAccount).where(RewardAccount.company_id == bindparam("company_id"),
                                       RewardAccount.customer_id == bindparam("customer_id"))
_PROGRAM = select(Program.tiers, Program.tier_window_days).where(
    Program.company_id == bindparam("company_id"))
_ACTIVITIES = (select(LedgerEntry)
               .where(LedgerEntry.company_id == bindparam("company_id"),
                      LedgerEntry.customer_id == bindparam("customer_id"))
               .order_by(LedgerEntry.created_at.desc(), LedgerEntry.id.desc())
               .offset(bindparam("offset")).limit(bindparam("limit")))
_ACTIVITY_COUNT = (select(func.count()).select_from(LedgerEntry)
                   .where(LedgerEntry.company_id == bindparam("company_id"),
                          LedgerEntry.customer_id == bindparam("customer_id")))


def fresh(session: Session, account: RewardAccount, now: datetime) -> RewardAccount | Account:
    """The account read with whatever has come due matured or credited (first touch: it is
    locked only when something is due)."""
    if ledger.comes_due(account, now):
        return ledger.lock(UnitOfWork.of(session), account.company_id, account.customer_id, now)
    return account


@dataclass(frozen=True)
class AccountStanding:
    """The account as RewardAccountResponse shows it: balances, and the tier (null without
    tiers)."""

    account: RewardAccount | Account
    standing: tiers.Standing | None

    @property
    def tier(self) -> dict | None:
        return None if self.standing is None else self.standing.as_json()


def get_account(session: Session, company_id: str, customer_id: str,
                now: datetime) -> RewardAccount | Account:
    account = session.scalar(_ACCOUNT, {"company_id": company_id, "customer_id": customer_id})
    if account is None:
        raise NotFound("customer")
    return fresh(session, account, now)


def account_standing(session: Session, company_id: str, customer_id: str,
                     now: datetime) -> AccountStanding:
    """The account with its tier; a spend whose oldest sale has left the window is
    recomputed first (and a move down noticed)."""
    account = get_account(session, company_id, customer_id, now)
    program = session.execute(_PROGRAM, {"company_id": company_id}).one()
    tier_list = tiers.from_stored(program.tiers)
    if spend.is_stale(account.spend_oldest_at, program.tier_window_days, now):
        account = ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
        spend.refresh_noticed(UnitOfWork.of(session), account, program.tier_window_days,
                              tier_list, now)
    return AccountStanding(account, tiers.standing(tier_list, account.spend))


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
    record_event(session, company_id, "reward.adjusted", ledger.adjustment_as_json(entry, account))
    return entry, account


def activities(session: Session, company_id: str, customer_id: str, *, offset: int, limit: int,
               now: datetime) -> tuple[list[LedgerEntry], int]:
    """One page of the customer's ledger, newest first, and the number of entries."""
    get_account(session, company_id, customer_id, now)  # 404 for a stranger; matures what is due
    ids = {"company_id": company_id, "customer_id": customer_id}
    entries = list(session.scalars(_ACTIVITIES, {**ids, "offset": offset, "limit": limit}))
    total = (offset + len(entries) if entries and len(entries) < limit
             else session.scalar(_ACTIVITY_COUNT, ids))
    return entries, total
