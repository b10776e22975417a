"""Expiry on touch (docs/api.md#expiry): the due lots of a locked account expire, as EXPIRY
entries, and the due reminders go out, as `reward.expiring` events. Like maturing, it costs
nothing until the account's `next_expiry_at` or `next_reminder_at` has come."""
from __future__ import annotations

from datetime import datetime

from app.models.base import new_id
from app.services.rewards import lots
from app.services.rewards.locked_account import Account
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event
from app.wire import Balance, format_amount, format_timestamp


def changes_balance(account, now: datetime) -> bool:
    """A touch now would change the available balance: something matures or expires."""
    return any(moment is not None and moment <= now for moment in (
        account.next_maturity_at, account.next_expiry_at if account.available > 0 else None))


def is_due(account, now: datetime) -> bool:
    """Something on the account matures, expires or is to be reminded of now: a reader
    locks it (first touch); otherwise touching costs nothing."""
    return changes_balance(account, now) or (
        account.next_reminder_at is not None and account.next_reminder_at <= now)


def expire_due(work: UnitOfWork, account: Account, now: datetime) -> list[dict]:
    """Expire the lots whose time has come and send the reminders that are due, as a touch
    does; returns the EXPIRY entries written."""
    if not is_due(account, now):
        return []
    entries = apply_expiry(account, now)
    for entry in entries:
        record_event(work.session, account.company_id, "reward.expired", {
            "customerId": account.customer_id, "amount": format_amount(entry["amount"]),
            "expiredAt": format_timestamp(now), "balance": Balance.of(account).as_json()})
    for lot in account.reminded:
        record_event(work.session, account.company_id, "reward.expiring", {
            "customerId": account.customer_id, "amount": format_amount(lot.remaining),
            "expiresAt": format_timestamp(lot.expires_at)})
    account.reminded = []
    return entries


def apply_expiry(account: Account, now: datetime) -> list[dict]:
    """In memory: one EXPIRY entry per due lot for what active holds do not cover, the
    due reminders marked sent (left in `account.reminded`), the next moments recomputed."""
    held = account.open_lots()
    if not account.lots_complete and all(
            lot.expires_at is not None and lot.expires_at <= now for lot in held):
        held = account.all_lots()  # every lot read is due: there may be more
    entries = []
    for lot, amount in lots.expire(held, account.available, account.reserved, now):
        account.lot_changed(lot)
        if amount:
            entries.append(_entry(account, "EXPIRY", -amount, now, basis=lots.EXPIRED_BASIS))
            account.available -= amount
    account.reminded = [lot for lot in lots.due_reminders(held, now) if lot.remaining > 0]
    for lot in account.reminded:
        account.lot_changed(lot)
    account.next_expiry_at = lots.next_expiry(held)
    account.next_reminder_at = lots.next_reminder(held)
    account.updated_at = now
    return entries


def _entry(account: Account, type: str, amount: int, now: datetime, **more) -> dict:
    values = {"company_id": account.company_id, "customer_id": account.customer_id, "type": type,
              "amount": amount, "status": "ACTIVE", "available_at": now, "basis": None,
              "sale_id": None, "return_id": None, "hold_id": None, "created_at": now,
              "id": new_id(), **more}
    account.new_entries.append(values)
    return values
