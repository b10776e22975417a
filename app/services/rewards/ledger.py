"""The reward ledger: the only code that changes a balance.

Balances (kopecks) on the account are a cache of the ledger, always changed with an entry,
under a row lock on the account, so concurrent holds and debits serialise:
    available = Σ ACTIVE entries − reserved
    pending   = Σ PENDING entries
    reserved  = Σ amounts of ACTIVE holds
PENDING entries mature to ACTIVE at `available_at`, on first touch of the account (so
correctness never waits for the scheduler) and by a periodic job; a birthday bonus due today
(app/services/rewards/bonuses.py) is credited the same way. Welcome and birthday bonuses are
BONUS entries posted as a positive adjustment is.

Every ACTIVE credit is a lot and every ACTIVE debit takes from the lots, both in `post`;
lots whose time has come expire on the same first touch and by the periodic job
(app/services/rewards/lots.py, docs/api.md#expiry):
    Σ lots' remaining = max(0, available + reserved)

An account is changed as an `Account` (app/services/rewards/locked_account.py) held by the
transaction's unit of work, which writes it out; reading one without changing it may use
the ORM's RewardAccount.
"""
from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.orm import Session

from app.models import LedgerEntry, Program, RewardAccount
from app.models.base import new_id
from app.services.errors import Conflict, NotFound
from app.services.rewards import bonuses, bounds, expiry, lots
from app.services.rewards.locked_account import LOCK, OPEN, PROGRAM_SETTINGS, Account
from app.services.rewards.lots import FIRST_OPEN_LOTS, OPEN_LOTS, Lot
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event
from app.wire import Balance, format_amount, format_timestamp

# PENDING entries mature to ACTIVE; no other status is written.
ENTRY_STATUSES = ("PENDING", "ACTIVE")
ENTRY_TYPES = ("ACCRUAL", "REDEMPTION", "ADJUSTMENT", "REDEMPTION_RESTORE", "ACCRUAL_REVERSAL", "EXPIRY",
               "BONUS")
# A credit's lot expires the program's pointsLifetimeDays after it, unless told otherwise.
PROGRAM_LIFETIME = object()

_ENTRIES = LedgerEntry.__table__
_OF_ACCOUNT = (_ENTRIES.c.company_id == bindparam("b_company_id"),
               _ENTRIES.c.customer_id == bindparam("b_customer_id"))
_DUE = (*_OF_ACCOUNT, _ENTRIES.c.status == "PENDING", _ENTRIES.c.available_at <= bindparam("now"))
DUE_COLUMNS = (_ENTRIES.c.id, _ENTRIES.c.amount, _ENTRIES.c.sale_id, _ENTRIES.c.available_at)
_DUE_ENTRIES = select(*DUE_COLUMNS).where(*_DUE)
_PROGRAM_OF_NEW = select(*PROGRAM_SETTINGS).where(Program.company_id == bindparam("company_id"))
_MATURE = update(_ENTRIES).where(*_DUE).values(status="ACTIVE")
_NEXT_MATURITY = select(func.min(_ENTRIES.c.available_at)).where(
    *_OF_ACCOUNT, _ENTRIES.c.status == "PENDING")


def open_account(work: UnitOfWork, company_id: str, customer_id: str, now: datetime,
                 birthday_due_on: date | None = None) -> Account:
    """A new customer's empty account, written at once (enrolment may retry on a clash). Its
    spend of 0 is right over the program's window, whichever it is."""
    account = Account(company_id, customer_id, 0, 0, 0, None, now,
                      birthday_due_on=birthday_due_on, lots=[], lots_complete=True)
    program = work.run(_PROGRAM_OF_NEW, {"company_id": company_id}).first()
    if program is not None:
        for column, value in zip(PROGRAM_SETTINGS, program):
            setattr(account, column.name, value)
        account.spend_window_version = account.tier_window_version
    work.run(OPEN, {"company_id": company_id, "customer_id": customer_id, "available": 0,
                    "pending": 0, "reserved": 0, "next_maturity_at": None, "updated_at": now,
                    "spend": 0, "spend_oldest_at": None, "birthday_due_on": birthday_due_on,
                    "spend_window_version": account.spend_window_version})
    work.accounts[(company_id, customer_id)] = account
    return account


def lock(work: UnitOfWork, company_id: str, customer_id: str, now: datetime,
         locked=None) -> Account:
    """The account under its row lock (FOR UPDATE on PostgreSQL; SQLite's write transaction
    is already exclusive), with whatever has come due matured and expired, and a birthday
    bonus due today credited. Locked once per transaction: again, it is the same object.
    `locked`: its row of LOCKED_COLUMNS, when the caller's own statement took the lock."""
    account = work.accounts.get((company_id, customer_id))
    if account is not None:
        return account
    row = locked or work.run(LOCK, {"company_id": company_id,
                                    "customer_id": customer_id}).first()
    if row is None:
        raise NotFound("customer")
    account = adopt(work, row)
    mature_due(work, account, now)
    # The lots due expired before the bonus comes: credited first, it would be "available"
    # to an expiry and let the points an active hold keeps expire (docs/api.md#expiry).
    expiry.expire_due(work, account, now)
    if bonuses.is_due(account.birthday_due_on, now):
        _credit_birthday(work, account, now)
    return account


def adopt(work: UnitOfWork, row) -> Account:
    """The unit of work's Account for a row of LOCKED_COLUMNS just locked."""
    account = Account(*row)
    work.accounts[(account.company_id, account.customer_id)] = account
    ids = {"company_id": account.company_id, "customer_id": account.customer_id}
    account.read_lots = lambda every: [Lot(*lot) for lot in (
        work.run(OPEN_LOTS, ids) if every
        else work.run(FIRST_OPEN_LOTS, {**ids, "page": lots.LOT_PAGE}))]
    return account


def comes_due(account, now: datetime) -> bool:
    """A read of the account (ORM or locked) should lock it first: accruals to mature, a
    birthday bonus to credit, points to expire or to remind of (correctness never waits for
    the periodic job)."""
    return ((account.next_maturity_at is not None and account.next_maturity_at <= now)
            or bonuses.is_due(account.birthday_due_on, now) or expiry.is_due(account, now))


def _credit_birthday(work: UnitOfWork, account: Account, now: datetime) -> None:
    amount, birth = work.run(bonuses.BIRTHDAY_OF, {"company_id": account.company_id,
                                                   "customer_id": account.customer_id}).one()
    # Cut at the bound, not refused: the periodic job and every touch must go on
    # (docs/api.md#money).
    amount = min(amount or 0, bounds.credit_room(account))
    if amount:
        credit_bonus(work, account, amount, bonuses.BIRTHDAY, now)
    account.birthday_due_on = bonuses.after_credit(birth, now)
    account.updated_at = now


def credit_bonus(work: UnitOfWork, account: Account, amount: int, basis: str,
                 now: datetime) -> dict:
    """A welcome or birthday bonus: a BONUS entry, ACTIVE at once, posted as a positive
    adjustment is, and `reward.adjusted`."""
    entry = post(account, type="BONUS", amount=amount, now=now, basis=basis)
    record_event(work.session, account.company_id, "reward.adjusted",
                 adjustment_as_json(entry, account))
    return entry


def adjustment_as_json(entry: dict, account: Account) -> dict:
    """An adjustment or a bonus as RewardAdjustmentResponse (and `reward.adjusted`) shows it."""
    return {"id": entry["id"], "customerId": entry["customer_id"],
            "amount": format_amount(entry["amount"]), "basis": entry["basis"],
            "balance": Balance.of(account).as_json(),
            "createdAt": format_timestamp(entry["created_at"])}


def post(account: Account, *, type: str, amount: int, now: datetime,
         status: str = "ACTIVE", available_at: datetime | None = None, basis: str | None = None,
         sale_id: str | None = None, return_id: str | None = None, hold_id: str | None = None,
         from_reserved: bool = False, expires_at: datetime | None | object = PROGRAM_LIFETIME
         ) -> dict:
    """Add one entry and move the balance with it. `from_reserved` takes an ACTIVE debit
    out of the reservation (capturing a hold) instead of the available balance. The entry
    comes back as the values of its row.

    The one credit path: every ACTIVE credit, whatever its type, becomes a lot here, expiring
    `expires_at` (by default the program's pointsLifetimeDays from now); every ACTIVE debit
    takes from the lots here (docs/api.md#expiry)."""
    if type not in ENTRY_TYPES:
        raise ValueError(f"unknown entry type {type}")
    values = {"company_id": account.company_id, "customer_id": account.customer_id, "type": type,
              "amount": amount, "status": status, "available_at": available_at or now,
              "basis": basis, "sale_id": sale_id, "return_id": return_id, "hold_id": hold_id,
              "created_at": now, "id": new_id()}
    account.new_entries.append(values)
    if status == "PENDING":
        account.pending += amount
        if account.next_maturity_at is None or values["available_at"] < account.next_maturity_at:
            account.next_maturity_at = values["available_at"]
    elif status == "ACTIVE":
        if amount > 0:
            # Only an accrual's lot is "the sale's own lot" a reversal takes from first.
            credit_lot(account, values["id"], amount, now, expires_at,
                       sale_id=sale_id if type == "ACCRUAL" else None)
        elif amount < 0:
            spend(account, -amount, first_sale_id=sale_id if type == "ACCRUAL_REVERSAL" else None)
        if from_reserved:
            if -amount > account.reserved:
                raise ValueError("capturing more than is reserved")
            account.reserved += amount
        else:
            account.available += amount
    else:
        raise ValueError(f"an entry is posted PENDING or ACTIVE, not {status}")
    account.updated_at = now
    return values


def credit_lot(account: Account, lot_id: str, amount: int, now: datetime,
               expires_at: datetime | None | object = PROGRAM_LIFETIME,
               sale_id: str | None = None) -> Lot:
    """A credit's lot: what is left of `amount` once it has paid the debt, until `expires_at`.
    Call before the credit moves the balance."""
    if expires_at is PROGRAM_LIFETIME:
        expires_at = lots.lifetime_end(now, account.points_lifetime_days)
    remaining = lots.credited_remaining(account.available + account.reserved, amount)
    lot = Lot(lot_id, sale_id, amount, remaining, expires_at,
              lots.reminder_moment(expires_at, account.expiry_reminder_days), now)
    account.add_lot(lot)
    if remaining > 0:
        account.next_expiry_at = _earliest(account.next_expiry_at, lot.expires_at)
        account.next_reminder_at = _earliest(account.next_reminder_at, lot.remind_at)
    return lot


def spend(account: Account, amount: int, first_sale_id: str | None = None) -> list[tuple[Lot, int]]:
    """A debit of `amount` takes from the lots that expire first. Call before the debit moves
    the balance. What the lots lack (a debt under UNLIMITED clawback) is taken from none."""
    amount = min(amount, max(0, account.available + account.reserved))
    held = account.open_lots()
    if not account.lots_complete and (
            sum(lot.remaining for lot in held) < amount
            or (first_sale_id is not None and all(lot.sale_id != first_sale_id for lot in held))):
        held = account.all_lots()  # the first page is not enough, or lacks the sale's own lot
    taken = lots.take(held, amount, first_sale_id)
    for lot, _ in taken:
        account.lot_changed(lot)
    account.last_spent = taken
    return taken


def _earliest(current: datetime | None, new: datetime | None) -> datetime | None:
    return new if current is None or (new is not None and new < current) else current


def debit_available(account: Account, amount: int, **entry) -> dict:
    """A debit that may not take the balance below zero: 409 insufficient_balance."""
    if amount > account.available:
        raise Conflict("the available balance is too small", code="insufficient_balance")
    return post(account, amount=-amount, **entry)


def reserve(account: Account, amount: int, now: datetime) -> None:
    if amount <= 0:
        raise ValueError("a reservation is positive")
    if amount > account.available:
        raise Conflict("the available balance is too small", code="insufficient_balance")
    account.available -= amount
    account.reserved += amount
    account.updated_at = now


def unreserve(account: Account, amount: int, now: datetime) -> None:
    if amount > account.reserved:
        raise ValueError("releasing more than is reserved")
    account.reserved -= amount
    account.available += amount
    account.updated_at = now


def mature_due(work: UnitOfWork, account: Account, now: datetime) -> int:
    """Turn PENDING entries whose time has come ACTIVE; returns the kopecks matured. A matured
    accrual becomes a lot from its availableAt; a matured reversal takes from its sale's lot."""
    if account.next_maturity_at is None or account.next_maturity_at > now:
        return 0
    due = {"b_company_id": account.company_id, "b_customer_id": account.customer_id, "now": now}
    rows = work.run(_DUE_ENTRIES, due).all()
    work.run(_MATURE, due)
    amount = apply_maturity(account, rows)
    account.next_maturity_at = work.run(_NEXT_MATURITY, due).scalar()
    account.updated_at = now
    return amount


def apply_maturity(account: Account, rows) -> int:
    """Move matured entries (id, amount, sale_id, available_at) from pending to available:
    credits first (each a lot), then the reversals, which take from their sale's lot first."""
    amount = 0
    for row in sorted(rows, key=lambda row: row.amount < 0):
        if row.amount > 0:
            # Its lot's life (the program's lifetime) runs from its availableAt.
            credit_lot(account, row.id, row.amount, row.available_at, sale_id=row.sale_id)
        elif row.amount < 0:
            spend(account, -row.amount, first_sale_id=row.sale_id)
        account.pending -= row.amount
        account.available += row.amount
        amount += row.amount
    return amount


def accounts_due(session: Session, now: datetime, limit: int = 500) -> list[tuple[str, str]]:
    """(company_id, customer_id) of accounts with something to mature, for the periodic job."""
    return [(company_id, customer_id) for company_id, customer_id in session.execute(
        select(RewardAccount.company_id, RewardAccount.customer_id)
        .where(RewardAccount.next_maturity_at <= now).limit(limit))]
