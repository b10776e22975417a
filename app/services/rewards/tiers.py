"""Tiers (docs/api.md#tiers): the customer's spend over the program's window picks the tier whose
accrual percent replaces the program's. Pure rules; the spend itself is kept by
app/services/rewards/spend.py."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from app.wire import format_amount, format_percent

MOST_TIERS = 10


@dataclass(frozen=True)
class Tier:
    name: str
    min_spend: int  # kopecks
    accrual_bp: int


@dataclass(frozen=True)
class Standing:
    """Where a customer stands: their tier, their spend, and the next tier up (if any)."""

    tier: Tier
    spend: int
    next: Tier | None

    def as_json(self) -> dict:
        return {"name": self.tier.name, "accrualPercent": format_percent(self.tier.accrual_bp),
                "spend": format_amount(self.spend),
                "next": None if self.next is None else {
                    "name": self.next.name, "minSpend": format_amount(self.next.min_spend),
                    "remaining": format_amount(self.next.min_spend - self.spend)}}


def tiers_problem(tiers: list[Tier]) -> str | None:
    """Why a tier list cannot be the program's, or None."""
    if len(tiers) > MOST_TIERS:
        return f"at most {MOST_TIERS} tiers"
    if not tiers:
        return None
    if len({tier.name for tier in tiers}) != len(tiers):
        return "tier names must be unique"
    if len({tier.min_spend for tier in tiers}) != len(tiers):
        return "tier minSpends must be distinct"
    if all(tier.min_spend != 0 for tier in tiers):
        return 'one tier must have minSpend "0.00"'
    return None


def stored(tiers: list[Tier]) -> str:
    """The program's column: by minSpend."""
    return json.dumps([{"name": tier.name, "minSpend": tier.min_spend, "accrualBp": tier.accrual_bp}
                       for tier in sorted(tiers, key=lambda tier: tier.min_spend)],
                      ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=1024)
def from_stored(text: str) -> tuple[Tier, ...]:
    """Parsed once per distinct program value: every quote reads the column."""
    return tuple(Tier(item["name"], item["minSpend"], item["accrualBp"]) for item in json.loads(text))


def as_json(tiers: tuple[Tier, ...]) -> list[dict]:
    return [{"name": tier.name, "minSpend": format_amount(tier.min_spend),
             "accrualPercent": format_percent(tier.accrual_bp)} for tier in tiers]


def tier_of(tiers: tuple[Tier, ...], spend: int) -> Tier | None:
    """The tier with the largest minSpend ≤ spend (tiers are by minSpend)."""
    found = None
    for tier in tiers:
        if tier.min_spend <= spend:
            found = tier
    return found


def standing(tiers: tuple[Tier, ...], spend: int) -> Standing | None:
    tier = tier_of(tiers, spend)
    if tier is None:
        return None
    above = [candidate for candidate in tiers if candidate.min_spend > spend]
    return Standing(tier, spend, above[0] if above else None)


def customer_accrual_bp(tiers: tuple[Tier, ...], spend: int, program_bp: int) -> int:
    """The customer's own percent: their tier's, else the program's."""
    tier = tier_of(tiers, spend)
    return program_bp if tier is None else tier.accrual_bp


def line_spend(amount: int, discount: int, quantity: int, returned_quantity: int) -> int:
    """What a sale line adds to the spend: floor((amount − discount) × kept / sold)."""
    return (amount - discount) * (quantity - returned_quantity) // quantity


def window_start(now: datetime, window_days: int | None) -> datetime | None:
    """Sales committed after this moment count (None: all time)."""
    return None if window_days is None else now - timedelta(days=window_days)
