"""A customer's reward account as callers see it: balances, manual adjustments and the
ledger's history. Every balance change goes through `app.services.rewards.ledger`."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from app.models import LedgerEntry, Program, RewardAccount, RewardLot
from app.services.audit import events as audit
from app.services.errors import InvalidField, NotFound
from app.services.rewards import bounds, expiry, ledger, lots, spend, tiers
from app.services.rewards.locked_account import Account
from app.services.rewards.lots import FIRST_OPEN_LOTS, LOT_PAGE, OPEN_LOTS, Lot
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event
from app.wire import Balance, format_amount

# Balances are kept in a signed 64-bit column (and bounded far inside it: bounds.py).
LARGEST_BALANCE = 2 ** 63 - 1
# Promotional points live at most this long (docs/api.md#expiry).
LONGEST_PROMOTION_YEARS = 10


_ACCOUNT = select(RewardAccount).where(RewardAccount.company_id == bindparam("company_id"),
                                       RewardAccount.customer_id == bindparam("customer_id"))
_PROGRAM = select(Program.tiers, Program.tier_window_days, Program.tier_window_version).where(
    Program.company_id == bindparam("company_id"))
_LOT_OF_ENTRY = ((RewardLot.company_id == LedgerEntry.company_id)
                 & (RewardLot.id == LedgerEntry.id))
_ACTIVITIES = (select(LedgerEntry, RewardLot.expires_at).outerjoin(RewardLot, _LOT_OF_ENTRY)
               .where(LedgerEntry.company_id == bindparam("company_id"),
                      LedgerEntry.customer_id == bindparam("customer_id"))
               .order_by(LedgerEntry.created_at.desc(), LedgerEntry.id.desc())
               .offset(bindparam("offset")).limit(bindparam("limit")))
_ACTIVITY_COUNT = (select(func.count()).select_from(LedgerEntry)
                   .where(LedgerEntry.company_id == bindparam("company_id"),
                          LedgerEntry.customer_id == bindparam("customer_id")))


def fresh(session: Session, account: RewardAccount, now: datetime) -> RewardAccount | Account:
    """The account read with whatever has come due matured, credited or expired (first
    touch: it is locked only when something is due)."""
    if ledger.comes_due(account, now):
        return ledger.lock(UnitOfWork.of(session), account.company_id, account.customer_id, now)
    return account


@dataclass(frozen=True)
class AccountStanding:
    """The account as RewardAccountResponse shows it: balances, and the tier (null without
    tiers)."""

    account: RewardAccount | Account
    standing: tiers.Standing | None
    expiring: list[dict] = field(default_factory=list)  # {expires_at, amount}, soonest first

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
    """The account with its tier and the points about to expire; a spend that needs a recount
    (an older window, or its oldest sale has left it) is recounted first (and a move
    noticed)."""
    account = get_account(session, company_id, customer_id, now)
    program = session.execute(_PROGRAM, {"company_id": company_id}).one()
    tier_list = tiers.from_stored(program.tiers)
    if spend.needs_refresh(account, program, now):
        account = ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
        spend.refresh_noticed(UnitOfWork.of(session), account, tier_list, now)
    return AccountStanding(account, tiers.standing(tier_list, account.spend),
                           _expiring(session, account))


def _expiring(session: Session, account: RewardAccount | Account) -> list[dict]:
    """RewardAccountResponse's `expiring`: the next moments points would expire, from the
    account's first page of lots."""
    if isinstance(account, Account):
        held = account.open_lots()
    else:
        ids = {"company_id": account.company_id, "customer_id": account.customer_id}
        held = [Lot(*row) for row in session.execute(FIRST_OPEN_LOTS, {**ids, "page": LOT_PAGE})]
    return [{"expires_at": moment, "amount": amount}
            for moment, amount in lots.expiring(held, account.available, account.reserved)]


def _promotion_end(expires_at: datetime | None, amount: int, now: datetime) -> datetime | None:
    """The adjustment's own expiresAt, checked: only on a credit, later than now, at most ten
    years ahead (422 on body.expiresAt otherwise)."""
    if expires_at is None:
        return None
    if amount < 0:
        raise InvalidField(["body", "expiresAt"], "only a credit (a positive amount) expires",
                           "value_error")
    if expires_at <= now:
        raise InvalidField(["body", "expiresAt"], "must be later than now", "value_error")
    try:
        latest = now.replace(year=now.year + LONGEST_PROMOTION_YEARS)
    except ValueError:  # 29 February
        latest = now.replace(year=now.year + LONGEST_PROMOTION_YEARS, day=28)
    if expires_at > latest:
        raise InvalidField(["body", "expiresAt"], "must be at most 10 years ahead", "value_error")
    return expires_at


def adjust(session: Session, company_id: str, customer_id: str, *, amount: int, basis: str,
           now: datetime, expires_at: datetime | None = None,
           actor: audit.Actor | None = None) -> tuple[dict, Account]:
    """A manual credit (ACTIVE at once; a lot until `expires_at`, by default the program's
    lifetime) or debit (never beyond the available balance: 409 insufficient_balance), as one
    ADJUSTMENT entry under the account's row lock, recorded in the audit as `actor`'s. The
    entry comes back as the values of its row."""
    if amount == 0:
        raise ValueError("an adjustment is not zero")
    promotion_end = _promotion_end(expires_at, amount, now)
    account = ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
    if amount > 0:
        # Checked under the lock, against the balance this transaction sees (docs/api.md#money).
        if amount > bounds.credit_room(account):
            raise InvalidField(
                ["body", "amount"], "the balance would pass "
                f"{format_amount(bounds.BALANCE_BOUND)}, the most an account holds",
                "value_too_large")
        lifetime = {} if promotion_end is None else {"expires_at": promotion_end}
        entry = ledger.post(account, type="ADJUSTMENT", amount=amount, now=now, basis=basis,
                            **lifetime)
    else:
        entry = ledger.debit_available(account, -amount, type="ADJUSTMENT", now=now, basis=basis)
    record_event(session, company_id, "reward.adjusted", ledger.adjustment_as_json(entry, account))
    audit.record(session, company_id, actor, "reward.adjusted", "ledger_entry", entry["id"], at=now)
    return entry, account


def activities(session: Session, company_id: str, customer_id: str, *, offset: int, limit: int,
               now: datetime) -> tuple[list[dict], int]:
    """One page of the customer's ledger, newest first (each entry with its lot's expiresAt:
    null but for credits, and its author: who made it by hand, else null), and the number of
    entries."""
    get_account(session, company_id, customer_id, now)  # 404 for a stranger; matures what is due
    ids = {"company_id": company_id, "customer_id": customer_id}
    entries = [{**{column.key: getattr(entry, column.key) for column in LedgerEntry.__table__.c},
                "expires_at": expires_at}
               for entry, expires_at in session.execute(
                   _ACTIVITIES, {**ids, "offset": offset, "limit": limit})]
    made = audit.authors(session, company_id,
                         [entry["id"] for entry in entries if entry["type"] == "ADJUSTMENT"])
    for entry in entries:
        entry["author"] = made.get(entry["id"])
    total = (offset + len(entries) if entries and len(entries) < limit
             else session.scalar(_ACTIVITY_COUNT, ids))
    return entries, total


def shown_balances(session: Session, company_id: str, accounts: list[RewardAccount],
                   now: datetime) -> dict[str, Balance]:
    """Balances of many accounts as a touch would leave them (due maturities and expiries
    applied to copies, nothing locked or written), by customer: for the directory. Accounts
    with nothing due are left out: their stored balance is it."""
    due = {account.customer_id: account for account in accounts if expiry.is_due(account, now)}
    if not due:
        return {}
    program = session.execute(select(Program.points_lifetime_days, Program.expiry_reminder_days)
                              .where(Program.company_id == company_id)).one()
    matured: dict[str, list] = {}
    for row in session.execute(select(LedgerEntry.customer_id, *ledger.DUE_COLUMNS).where(
            LedgerEntry.company_id == company_id, LedgerEntry.customer_id.in_(list(due)),
            LedgerEntry.status == "PENDING", LedgerEntry.available_at <= now)):
        matured.setdefault(row.customer_id, []).append(row)
    held: dict[str, list[Lot]] = {customer_id: [] for customer_id in due}
    for customer_id, *lot in session.execute(
            select(RewardLot.customer_id, *OPEN_LOTS.selected_columns).where(
                RewardLot.company_id == company_id, RewardLot.customer_id.in_(list(due)),
                RewardLot.remaining > 0)):
        held[customer_id].append(Lot(*lot))
    shown = {}
    for customer_id, stored in due.items():
        copy = Account(company_id, customer_id, stored.available, stored.pending, stored.reserved,
                       stored.next_maturity_at, stored.updated_at,
                       next_expiry_at=stored.next_expiry_at,
                       next_reminder_at=stored.next_reminder_at,
                       points_lifetime_days=program.points_lifetime_days,
                       expiry_reminder_days=program.expiry_reminder_days,
                       lots=held[customer_id], lots_complete=True)
        ledger.apply_maturity(copy, matured.get(customer_id, []))
        expiry.apply_expiry(copy, now)
        shown[customer_id] = Balance.of(copy)
    return shown
