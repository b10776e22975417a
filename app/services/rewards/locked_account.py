"""A reward account under its row lock, as plain values: the one account type every change
goes through (checkout, returns, adjustments, enrolment, upkeep).

The ledger's rules (app/services/rewards/ledger.py) move its figures and add entries in
memory; the unit of work writes it out. It remembers the figures last written, so whatever
changes after a write-out is written again at commit, never lost.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from sqlalchemy import bindparam, insert, select, update

from app.models import LedgerEntry, Program, RewardAccount
from app.services.rewards import lots as lot_rules
from app.services.rewards.lots import LOTS, Lot

ACCOUNTS = RewardAccount.__table__
_PROGRAMS = Program.__table__


# The program's settings an Account carries, named as its fields, last in their order: they
# come with the lock (scalar subqueries), so a credit knows its lot's life and a recount its
# window without a round trip of their own.
PROGRAM_SETTINGS = (_PROGRAMS.c.points_lifetime_days, _PROGRAMS.c.expiry_reminder_days,
                    _PROGRAMS.c.tier_window_version, _PROGRAMS.c.tier_window_days)


def _of_program(column):
    return (select(column).where(_PROGRAMS.c.company_id == ACCOUNTS.c.company_id)
            .scalar_subquery().label(column.name))


LOCKED_COLUMNS = (ACCOUNTS.c.company_id, ACCOUNTS.c.customer_id, ACCOUNTS.c.available,
                  ACCOUNTS.c.pending, ACCOUNTS.c.reserved, ACCOUNTS.c.next_maturity_at,
                  ACCOUNTS.c.updated_at, ACCOUNTS.c.spend, ACCOUNTS.c.spend_oldest_at,
                  ACCOUNTS.c.birthday_due_on, ACCOUNTS.c.next_expiry_at,
                  ACCOUNTS.c.next_reminder_at, ACCOUNTS.c.spend_window_version,
                  *(_of_program(column) for column in PROGRAM_SETTINGS))
LOCK = (select(*LOCKED_COLUMNS)
        .where(ACCOUNTS.c.company_id == bindparam("company_id"),
               ACCOUNTS.c.customer_id == bindparam("customer_id"))
        .with_for_update(of=ACCOUNTS))
OPEN = insert(ACCOUNTS)
SAVE = (update(ACCOUNTS)
         .where(ACCOUNTS.c.company_id == bindparam("b_company_id"),
                ACCOUNTS.c.customer_id == bindparam("b_customer_id"))
         .values(available=bindparam("b_available"), pending=bindparam("b_pending"),
                 reserved=bindparam("b_reserved"), next_maturity_at=bindparam("b_next_maturity_at"),
                 updated_at=bindparam("b_updated_at"), spend=bindparam("b_spend"),
                 spend_oldest_at=bindparam("b_spend_oldest_at"),
                 birthday_due_on=bindparam("b_birthday_due_on"),
                 next_expiry_at=bindparam("b_next_expiry_at"),
                 next_reminder_at=bindparam("b_next_reminder_at"),
                 spend_window_version=bindparam("b_spend_window_version")))
_INSERT_ENTRIES = insert(LedgerEntry.__table__)
_INSERT_LOTS = insert(LOTS)
SAVE_LOT = (update(LOTS)
             .where(LOTS.c.company_id == bindparam("b_company_id"), LOTS.c.id == bindparam("b_id"))
             .values(remaining=bindparam("b_remaining"), remind_at=bindparam("b_remind_at")))


@dataclass(eq=False)
class Account:
    company_id: str
    customer_id: str
    available: int
    pending: int
    reserved: int
    next_maturity_at: datetime | None
    updated_at: datetime
    # The tier's spend and its oldest sale (app/services/rewards/spend.py); the day the next
    # birthday bonus is due (app/services/rewards/bonuses.py).
    spend: int = 0
    spend_oldest_at: datetime | None = None
    birthday_due_on: date | None = None
    next_expiry_at: datetime | None = None
    next_reminder_at: datetime | None = None
    # The tier window's version the spend was counted for (app/services/rewards/spend.py).
    spend_window_version: int = 0
    # PROGRAM_SETTINGS, when the account was locked (docs/api.md#expiry, #tiers).
    points_lifetime_days: int | None = None
    expiry_reminder_days: int | None = None
    tier_window_version: int = 0
    tier_window_days: int | None = None
    # Entries posted since the last write-out: rows of ledger_entries, as values.
    new_entries: list[dict] = field(default_factory=list)
    # The lots with points left, read on first need (a debit or an expiry) by `read_lots`
    # (its argument: all of them, or only the first LOT_PAGE in spending order); None until
    # then. Lots made meanwhile wait in `new_lots`, changed ones in `changed_lots`.
    lots: list[Lot] | None = None
    lots_complete: bool = False
    read_lots: Callable[[bool], list[Lot]] | None = None
    new_lots: list[Lot] = field(default_factory=list)
    changed_lots: dict[str, Lot] = field(default_factory=dict)
    # (lot, taken) of the last debit: a redemption's restore expires with its earliest lot.
    last_spent: list[tuple[Lot, int]] = field(default_factory=list)
    # Lots whose reward.expiring the last expiry marked sent, for the events.
    reminded: list[Lot] = field(default_factory=list)
    written: tuple = ()

    def __post_init__(self) -> None:
        self.written = self._figures()

    def _figures(self) -> tuple:
        return (self.available, self.pending, self.reserved, self.next_maturity_at,
                self.updated_at, self.spend, self.spend_oldest_at, self.birthday_due_on,
                self.next_expiry_at, self.next_reminder_at, self.spend_window_version)

    def open_lots(self) -> list[Lot]:
        """The lots with points left that come first in spending order (every one when
        `lots_complete`), the ones made in this transaction included."""
        if self.lots is None:
            self.lots = []
            self._merge(self.read_lots(False) if self.read_lots else [])
            self.lots_complete = len(self.lots) < lot_rules.LOT_PAGE
            self._merge(self.new_lots)
        return self.lots

    def all_lots(self) -> list[Lot]:
        """Every lot with points left; those read before are kept as changed since."""
        self.open_lots()
        if not self.lots_complete:
            self._merge(self.read_lots(True))
            self.lots_complete = True
        return self.lots

    def _merge(self, found: list[Lot]) -> None:
        known = {lot.id for lot in self.lots}
        self.lots.extend(lot for lot in found if lot.id not in known)

    def add_lot(self, lot: Lot) -> None:
        self.new_lots.append(lot)
        if self.lots is not None:
            self.lots.append(lot)

    def lot_changed(self, lot: Lot) -> None:
        if lot not in self.new_lots:
            self.changed_lots[lot.id] = lot

    def writes(self) -> list[tuple]:
        """(statement, params) that bring the stored account up to this one; none when
        nothing changed since the last call."""
        figures = self._figures()
        if not self.new_entries and not self.new_lots and not self.changed_lots \
                and figures == self.written:
            return []
        writes = [(_INSERT_ENTRIES, self.new_entries)] if self.new_entries else []
        if self.new_lots:
            writes.append((_INSERT_LOTS, [
                {"company_id": self.company_id, "customer_id": self.customer_id, **lot.__dict__}
                for lot in self.new_lots]))
        if self.changed_lots:
            writes.append((SAVE_LOT, [
                {"b_company_id": self.company_id, "b_id": lot.id, "b_remaining": lot.remaining,
                 "b_remind_at": lot.remind_at} for lot in self.changed_lots.values()]))
        writes.append((SAVE, {
            "b_company_id": self.company_id, "b_customer_id": self.customer_id,
            "b_available": self.available, "b_pending": self.pending,
            "b_reserved": self.reserved, "b_next_maturity_at": self.next_maturity_at,
            "b_updated_at": self.updated_at, "b_spend": self.spend,
            "b_spend_oldest_at": self.spend_oldest_at, "b_birthday_due_on": self.birthday_due_on,
            "b_next_expiry_at": self.next_expiry_at, "b_next_reminder_at": self.next_reminder_at,
            "b_spend_window_version": self.spend_window_version}))
        self.new_entries, self.new_lots, self.changed_lots = [], [], {}
        self.written = figures
        return writes
