"""A reward account under its row lock, as plain values: the one account type every change
goes through (checkout, returns, adjustments, enrolment, upkeep).

The ledger's rules (app/services/rewards/ledger.py) move its figures and add entries in
memory; the unit of work writes it out. It remembers the figures last written, so whatever
changes after a write-out is written again at commit, never lost.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from sqlalchemy import bindparam, insert, select, update

from app.models import LedgerEntry, RewardAccount

ACCOUNTS = RewardAccount.__table__
LOCK = (select(ACCOUNTS.c.company_id, ACCOUNTS.c.customer_id, ACCOUNTS.c.available,
               ACCOUNTS.c.pending, ACCOUNTS.c.reserved, ACCOUNTS.c.next_maturity_at,
               ACCOUNTS.c.updated_at, ACCOUNTS.c.spend, ACCOUNTS.c.spend_oldest_at,
               ACCOUNTS.c.birthday_due_on)
        .where(ACCOUNTS.c.company_id == bindparam("company_id"),
               ACCOUNTS.c.customer_id == bindparam("customer_id"))
        .with_for_update())
OPEN = insert(ACCOUNTS)
_SAVE = (update(ACCOUNTS)
         .where(ACCOUNTS.c.company_id == bindparam("b_company_id"),
                ACCOUNTS.c.customer_id == bindparam("b_customer_id"))
         .values(available=bindparam("b_available"), pending=bindparam("b_pending"),
                 reserved=bindparam("b_reserved"), next_maturity_at=bindparam("b_next_maturity_at"),
                 updated_at=bindparam("b_updated_at"), spend=bindparam("b_spend"),
                 spend_oldest_at=bindparam("b_spend_oldest_at"),
                 birthday_due_on=bindparam("b_birthday_due_on")))
_INSERT_ENTRIES = insert(LedgerEntry.__table__)


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
    # Entries posted since the last write-out: rows of ledger_entries, as values.
    new_entries: list[dict] = field(default_factory=list)
    written: tuple = ()

    def __post_init__(self) -> None:
        self.written = self._figures()

    def _figures(self) -> tuple:
        return (self.available, self.pending, self.reserved, self.next_maturity_at,
                self.updated_at, self.spend, self.spend_oldest_at, self.birthday_due_on)

    def writes(self) -> list[tuple]:
        """(statement, params) that bring the stored account up to this one; none when
        nothing changed since the last call."""
        figures = self._figures()
        if not self.new_entries and figures == self.written:
            return []
        writes = [(_INSERT_ENTRIES, self.new_entries)] if self.new_entries else []
        writes.append((_SAVE, {
            "b_company_id": self.company_id, "b_customer_id": self.customer_id,
            "b_available": self.available, "b_pending": self.pending,
            "b_reserved": self.reserved, "b_next_maturity_at": self.next_maturity_at,
            "b_updated_at": self.updated_at, "b_spend": self.spend,
            "b_spend_oldest_at": self.spend_oldest_at, "b_birthday_due_on": self.birthday_due_on}))
        self.new_entries, self.written = [], figures
        return writes
