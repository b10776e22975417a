"""The money rules of a receipt (docs/api.md#money), in integer kopecks.

Every rounding here is down to the kopeck, and every spread hands out the
leftover kopecks so that the parts add up to the whole exactly: what the
customer is shown per line is what the ledger moves in total.
"""

from dataclasses import dataclass, replace
from typing import Sequence

BP_SCALE = 10_000  # basis points in 100 %

ITEM_NOT_REDEEMABLE = "ITEM_NOT_REDEEMABLE"

UNLIMITED = "UNLIMITED"
WITHIN_BALANCE = "WITHIN_BALANCE"
ONLY_PENDING = "ONLY_PENDING"
CLAWBACK_POLICIES = (UNLIMITED, WITHIN_BALANCE, ONLY_PENDING)


@dataclass(frozen=True)
class ReceiptLine:
    line_id: str
    amount: int
    redeemable_item: bool = True
    accruable_item: bool = True
    # The best campaign that applies to the line (docs/api.md#tiers): its percent, and its id.
    campaign_bp: int = 0
    campaign_id: str | None = None

    def __post_init__(self) -> None:
        if self.amount < 0:
            raise ValueError(f"line {self.line_id}: amount must not be negative")
        _check_bp("campaign_bp", self.campaign_bp)


@dataclass(frozen=True)
class PricedLine:
    line_id: str
    amount: int
    redeemable: int
    discount: int
    accrual: int
    restriction: str | None
    accrual_bp: int
    campaign_id: str | None = None


@dataclass(frozen=True)
class PricedReceipt:
    lines: tuple[PricedLine, ...]
    total_amount: int
    redeemable: int
    discount: int
    accrual: int


@dataclass(frozen=True)
class Clawback:
    from_pending: int
    from_available: int
    forgiven: int


def _check_bp(name: str, bp: int) -> None:
    if not 0 <= bp <= BP_SCALE:
        raise ValueError(f"{name} must be between 0 and {BP_SCALE} basis points")


def line_redeemable(amount: int, max_redeem_bp: int, redeemable_item: bool) -> int:
    """The most bonuses one line may take: floor(amount × percent)."""
    if not redeemable_item:
        return 0
    return amount * max_redeem_bp // BP_SCALE


def line_accrual(amount: int, discount: int, accrual_bp: int, accruable_item: bool) -> int:
    """Bonuses earned on what the customer actually pays for the line."""
    if not accruable_item:
        return 0
    return (amount - discount) * accrual_bp // BP_SCALE


def line_accrual_bp(customer_bp: int, line: ReceiptLine) -> tuple[int, str | None]:
    """The line's accrual percent: the largest of the customer's (tier, else program) and the
    campaign's; the campaign is named only when its percent is the larger."""
    if line.campaign_bp > customer_bp:
        return line.campaign_bp, line.campaign_id
    return customer_bp, None


def spread(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` in proportion to ``weights`` by the largest-remainder rule.

    Each part is rounded down; the leftover kopecks go one each to the largest
    remainders, equal remainders to the earlier index, so Σ parts == total.
    Since total ≤ Σ weights, a part never exceeds its weight: only a part with
    a non-zero remainder (so strictly below its weight) gets a leftover kopeck.
    """
    weight_sum = sum(weights)
    if any(w < 0 for w in weights):
        raise ValueError("weights must not be negative")
    if not 0 <= total <= weight_sum:
        raise ValueError(f"cannot spread {total} over weights summing to {weight_sum}")
    if total == 0:
        return [0] * len(weights)
    parts = []
    remainders = []
    for w in weights:
        part, remainder = divmod(total * w, weight_sum)
        parts.append(part)
        remainders.append(remainder)
    leftover = total - sum(parts)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-remainders[i], i))
    for i in by_remainder[:leftover]:
        parts[i] += 1
    return parts


def _priced(
    lines: Sequence[ReceiptLine],
    redeemables: list[int],
    *,
    redeemable: int,
    discount: int,
    accrual_bp: int,
) -> PricedReceipt:
    discounts = spread(discount, redeemables)
    percents = [line_accrual_bp(accrual_bp, line) for line in lines]
    priced = tuple(
        PricedLine(
            line_id=line.line_id,
            amount=line.amount,
            redeemable=line_max,
            discount=line_discount,
            accrual=line_accrual(line.amount, line_discount, line_bp, line.accruable_item),
            restriction=None if line.redeemable_item else ITEM_NOT_REDEEMABLE,
            accrual_bp=line_bp,
            campaign_id=campaign_id,
        )
        for line, line_max, line_discount, (line_bp, campaign_id)
        in zip(lines, redeemables, discounts, percents)
    )
    return PricedReceipt(
        lines=priced,
        total_amount=sum(line.amount for line in lines),
        redeemable=redeemable,
        discount=discount,
        accrual=sum(line.accrual for line in priced),
    )


def price_receipt(
    lines: Sequence[ReceiptLine],
    *,
    max_redeem_bp: int,
    accrual_bp: int,
    available: int,
    redeem_cap: int | None,
    redemption_allowed: bool,
) -> PricedReceipt:
    """Price a quote.

    Lines keep their own ``redeemable`` even when redemption is restricted, so the
    cashier still sees what each line could take; the totals are what this quote
    may and does redeem. A restricted redemption still accrues: the sale is never
    blocked.
    """
    _check_bp("max_redeem_bp", max_redeem_bp)
    _check_bp("accrual_bp", accrual_bp)
    if redeem_cap is not None and redeem_cap < 0:
        raise ValueError("redeem_cap must not be negative")
    redeemables = [
        line_redeemable(line.amount, max_redeem_bp, line.redeemable_item) for line in lines
    ]
    if redemption_allowed and available > 0:
        redeemable = min(sum(redeemables), available)
    else:
        redeemable = 0
    discount = redeemable if redeem_cap is None else min(redeemable, redeem_cap)
    return _priced(
        lines, redeemables, redeemable=redeemable, discount=discount, accrual_bp=accrual_bp
    )


def price_commit(
    lines: Sequence[ReceiptLine],
    *,
    max_redeem_bp: int,
    accrual_bp: int,
    redeemed: int,
) -> PricedReceipt:
    """Price a sale for the held amount (0 without a hold).

    The balance was already checked by the hold, so the total redeemable is the
    receipt's own Σ line redeemable.
    """
    _check_bp("max_redeem_bp", max_redeem_bp)
    _check_bp("accrual_bp", accrual_bp)
    redeemables = [
        line_redeemable(line.amount, max_redeem_bp, line.redeemable_item) for line in lines
    ]
    total_redeemable = sum(redeemables)
    if not 0 <= redeemed <= total_redeemable:
        raise ValueError(
            f"redeemed {redeemed} is outside 0..{total_redeemable}, the receipt's redeemable"
        )
    return _priced(
        lines, redeemables, redeemable=total_redeemable, discount=redeemed, accrual_bp=accrual_bp
    )


def cut_accrual(priced: PricedReceipt, most: int) -> PricedReceipt:
    """The receipt with its accrual cut to ``most`` (what the account's bound leaves,
    docs/api.md#money), spread over the lines in proportion to their accruals, so Σ line accrual
    stays the total and a return takes back only what was credited."""
    if priced.accrual <= most:
        return priced
    cut = spread(max(most, 0), [line.accrual for line in priced.lines])
    return replace(priced, accrual=sum(cut), lines=tuple(
        replace(line, accrual=accrual) for line, accrual in zip(priced.lines, cut)))


def return_share(
    value: int, sold_qty: int, returned_before: int, returning: int, already_taken: int
) -> int:
    """The part of a line's discount or accrual that goes with ``returning`` units.

    Partial returns round down; the return that empties the line takes exactly
    what is left, so a fully returned line nets to zero.
    """
    if sold_qty <= 0 or returning <= 0 or returned_before < 0:
        raise ValueError("quantities must be positive (returned_before may be zero)")
    if returned_before + returning > sold_qty:
        raise ValueError(
            f"returning {returning} after {returned_before} exceeds the sold {sold_qty}"
        )
    if not 0 <= already_taken <= value:
        raise ValueError(f"already_taken {already_taken} is outside 0..{value}")
    if returned_before + returning == sold_qty:
        return value - already_taken
    return value * returning // sold_qty


def clawback(
    policy: str, reversed_accrual: int, pending_left: int, available_after_restore: int,
    debt_room: int | None = None,
) -> Clawback:
    """Take back ``reversed_accrual``: pending bonuses first, then as ``policy`` says.

    ``available_after_restore`` is the available balance once the same return's
    redemption has been credited back, so WITHIN_BALANCE may use that too. ``debt_room``
    (unbounded when None) is the most an UNLIMITED clawback may take from the available
    balance, a debt included; the rest is forgiven.
    """
    if policy not in CLAWBACK_POLICIES:
        raise ValueError(f"unknown clawback policy {policy!r}")
    if reversed_accrual < 0 or pending_left < 0:
        raise ValueError("reversed_accrual and pending_left must not be negative")
    from_pending = min(reversed_accrual, pending_left)
    rest = reversed_accrual - from_pending
    if policy == UNLIMITED:
        # The balance may go negative: a debt later accruals pay off.
        from_available = rest if debt_room is None else min(rest, max(debt_room, 0))
    elif policy == WITHIN_BALANCE:
        from_available = min(rest, max(available_after_restore, 0))
    else:  # ONLY_PENDING
        from_available = 0
    return Clawback(
        from_pending=from_pending, from_available=from_available, forgiven=rest - from_available
    )
