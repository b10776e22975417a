"""Lots (docs/api.md#expiry): which points a debit takes and which expire, as plain values.

Every credit is a lot with its own `expires_at`; the account's lots hold, between them,
max(0, Σ ACTIVE entries) points. A credit first pays a debt; a debit takes from the lot that
expires first (lots without expiry last; equal expiresAt: the older lot first); what active
holds reserve covers the lots in that same order, and an expiry never takes the covered part. The rules are plain functions over `Lot` values
(beside them only the prebuilt query that reads an account's open lots): `ledger.py` applies
them to a locked account, and readers use them to show what a touch would.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, select

from app.models import RewardLot

LOTS = RewardLot.__table__
_COLUMNS = (LOTS.c.id, LOTS.c.sale_id, LOTS.c.amount, LOTS.c.remaining, LOTS.c.expires_at,
            LOTS.c.remind_at, LOTS.c.created_at)
# An account's lots with points left, in spending order: what a debit or an expiry may take
# from. A touch reads the first LOT_PAGE of them: a customer who shops every day keeps
# hundreds of lots, and a redemption seldom needs more than the first few. The order is the
# index's (ix_reward_lots_spending; NULLS LAST named, SQLite's ascending order puts them first),
# so that page is all PostgreSQL reads.
OPEN_LOTS = select(*_COLUMNS).where(
    LOTS.c.company_id == bindparam("company_id"), LOTS.c.customer_id == bindparam("customer_id"),
    LOTS.c.remaining > 0).order_by(LOTS.c.expires_at.nulls_last(), LOTS.c.created_at, LOTS.c.id)
LOT_PAGE = 32
FIRST_OPEN_LOTS = OPEN_LOTS.limit(bindparam("page"))

EXPIRED_BASIS = "points expired"


@dataclass(eq=False)
class Lot:
    id: str
    sale_id: str | None
    amount: int
    remaining: int
    expires_at: datetime | None
    remind_at: datetime | None
    created_at: datetime

    def order(self) -> tuple:
        """Spending order: the soonest expiry first, lots without one last, then the older."""
        return (self.expires_at is None, self.expires_at or self.created_at, self.created_at,
                self.id)


def spending_order(lots: list[Lot]) -> list[Lot]:
    return sorted((lot for lot in lots if lot.remaining > 0), key=Lot.order)


def earliest_end(taken: list[tuple[Lot, int]]) -> datetime | None:
    """When the earliest of the lots a debit took from expires; None when none of them does."""
    return min((lot.expires_at for lot, part in taken if part and lot.expires_at), default=None)


def credited_remaining(total: int, amount: int) -> int:
    """What of a credit of `amount` is left for its lot once it has paid the debt, `total`
    being available + reserved before it."""
    return amount if total >= 0 else max(0, total + amount)


def lifetime_end(start: datetime, lifetime_days: int | None) -> datetime | None:
    return None if lifetime_days is None else start + timedelta(days=lifetime_days)


def reminder_moment(expires_at: datetime | None, reminder_days: int | None) -> datetime | None:
    if expires_at is None or reminder_days is None:
        return None
    return expires_at - timedelta(days=reminder_days)


def take(lots: list[Lot], amount: int, first_sale_id: str | None = None) -> list[tuple[Lot, int]]:
    """Take up to `amount` from the lots in spending order (the lot of `first_sale_id`, an
    accrual reversal's own sale, before all others); returns (lot, taken) of each lot touched.
    Takes less only when the lots hold less: the rest is a debt."""
    ordered = spending_order(lots)
    if first_sale_id is not None:
        ordered.sort(key=lambda lot: lot.sale_id != first_sale_id)  # stable: the rest keep order
    return _take_in_order(ordered, amount)


def uncovered(lots: list[Lot], reserved: int) -> list[tuple[Lot, int]]:
    """(lot, the part of its remaining that active holds do not cover), in spending order.
    The reservation is counted against the lots in the order a capture would spend them, so
    the part it covers is the one a capture takes: it may not expire while the hold lasts
    (docs/api.md#expiry)."""
    parts = []
    for lot in spending_order(lots):
        covered = min(lot.remaining, max(reserved, 0))
        reserved -= covered
        parts.append((lot, lot.remaining - covered))
    return parts


def expire(lots: list[Lot], available: int, reserved: int,
           now: datetime) -> list[tuple[Lot, int]]:
    """The due lots' points that expire now, (lot, amount) soonest first: each due lot loses
    what the reservation does not cover, never more in all than max(available, 0). (With the
    lots whole, Σ uncovered = max(available, 0) already; the cap keeps a lot short of its
    points from taking the balance below zero.)"""
    left, taken = max(available, 0), []
    for lot, free in uncovered(lots, reserved):
        if left <= 0 or lot.expires_at is None or lot.expires_at > now:
            break  # the due lots come first in spending order
        part = min(free, left)
        if part:
            lot.remaining -= part
            left -= part
            taken.append((lot, part))
    return taken


def _take_in_order(ordered: list[Lot], amount: int) -> list[tuple[Lot, int]]:
    taken = []
    for lot in ordered:
        if amount <= 0:
            break
        part = min(lot.remaining, amount)
        lot.remaining -= part
        amount -= part
        taken.append((lot, part))
    return taken


def due_reminders(lots: list[Lot], now: datetime) -> list[Lot]:
    """Lots whose reward.expiring is due now; each is sent once (its remind_at is cleared)."""
    due = [lot for lot in spending_order(lots)
           if lot.remind_at is not None and lot.remind_at <= now]
    for lot in due:
        lot.remind_at = None
    return due


def next_expiry(lots: list[Lot]) -> datetime | None:
    return min((lot.expires_at for lot in lots if lot.remaining > 0 and lot.expires_at),
               default=None)


def next_reminder(lots: list[Lot]) -> datetime | None:
    return min((lot.remind_at for lot in lots if lot.remaining > 0 and lot.remind_at), default=None)


def expiring(lots: list[Lot], available: int, reserved: int,
             most: int = 5) -> list[tuple[datetime, int]]:
    """The next moments at which points would expire, with how many would, soonest first,
    if nothing else happened (the holds captured): each moment's lots lose what the
    reservation does not cover, never more in all than max(available, 0)."""
    moments: dict[datetime, int] = {}
    for lot, free in uncovered(lots, reserved):
        if lot.expires_at is not None:
            moments[lot.expires_at] = moments.get(lot.expires_at, 0) + free
    found = []
    left = max(available, 0)
    for moment, amount in sorted(moments.items()):
        part = min(amount, left)
        if left <= 0 or len(found) == most:
            break
        if part > 0:
            found.append((moment, part))
            left -= part
    return found
