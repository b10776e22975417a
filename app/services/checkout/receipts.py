"""The bonus lines a register prints on the customer's receipt (`receiptText`).

Receipt printers are narrow: every line is at most 40 characters. The text is made once, at
commit, and kept with the sale, so a reprint shows the balance as it was after the sale.
"""
from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.wire import format_amount

WIDTH = 40
DEFAULT_TIMEZONE = "Europe/Moscow"


def _row(label: str, amount: int) -> list[str]:
    value = format_amount(amount)
    if len(label) + 1 + len(value) <= WIDTH:
        return [label + value.rjust(WIDTH - len(label))]
    return [label[:WIDTH], value.rjust(WIDTH)[-WIDTH:]]


def _local_date(moment: datetime, timezone: str | None) -> str:
    try:
        zone = ZoneInfo(timezone or DEFAULT_TIMEZONE)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo(DEFAULT_TIMEZONE)
    return moment.astimezone(zone).strftime("%d.%m.%Y")


def receipt_text(*, redeemed: int, accrued: int, accrual_pending: bool,
                 accrual_available_at: datetime, balance_after: int,
                 timezone: str | None = None) -> list[str]:
    """Redeemed, accrued (with the date it becomes spendable when it waits), balance after.
    The date is the store's local date, as the customer reads it."""
    lines = _row("Bonuses redeemed:", redeemed) + _row("Bonuses earned:", accrued)
    if accrual_pending and accrued:
        lines.append(f"  spendable from {_local_date(accrual_available_at, timezone)}")
    lines += _row("Bonus balance:", balance_after)
    return lines
