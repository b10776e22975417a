"""Quotes (docs/api.md#money): what each line may take, what this quote redeems, what it earns."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from app.models.base import new_id
from app.models.checkout import ACTIVE, OPEN
from app.services.checkout import pricing
from app.services.checkout.holds import expire_touched_hold
from app.services.checkout.resources import QuoteResource
from app.services.checkout.sessions import (ATTEMPTS, check_not_expired, hold_has_expired,
                                            is_stopped, read_and_move)
from app.services.checkout.statements import CATALOG_FLAGS, INSERT_QUOTE, QUOTED
from app.services.errors import Conflict
from app.services.program import matching
from app.services.rewards import bonuses, expiry, ledger, spend, tiers
from app.services.unit_of_work import UnitOfWork
from app.wire import compact_json, packed

# Quotes

def _restriction(ctx, now: datetime, available: int,
                 lines: list[pricing.ReceiptLine]) -> str | None:
    if is_stopped(ctx, now):
        return "SUBSCRIPTION_INACTIVE"
    if ctx.terminal_id is not None and ctx.terminal_state != ACTIVE:
        return "TERMINAL_INACTIVE"
    if available <= 0:
        return "NO_BALANCE"
    if not any(pricing.line_redeemable(line.amount, ctx.max_redeem_bp, line.redeemable_item)
               for line in lines):
        return "NO_REDEEMABLE_LINES"
    return None


_NOT_IN_CATALOG = (True, True, None)


def catalog_items(work: UnitOfWork, company_id: str, store_id: str | None, read,
                  skus: list[str]) -> dict[str, tuple[bool, bool, str | None]]:
    """sku → (redeemable, accruable, category) of the store's catalog: `read` with the
    operation's context on PostgreSQL (statements.catalog_of_store), here on SQLite."""
    if store_id is None or not skus:
        return {}
    if work.postgresql:
        rows = read or ()
    else:
        rows = work.run(CATALOG_FLAGS, {"company": company_id, "store_id": store_id,
                                        "skus": skus})
    return {sku: (redeemable, accruable, category) for sku, redeemable, accruable, category in rows}


def _needs_lock(ctx, now: datetime, touched: bool) -> bool:
    """Something about the account comes due at this touch: an expired hold to release,
    accruals to mature or points to expire, a birthday bonus, or sales leaving the tier
    window."""
    return (touched or expiry.changes_balance(ctx, now)
            or bonuses.is_due(ctx.birthday_due_on, now)
            or spend.needs_refresh(ctx, ctx, now))


def receipt_lines(lines: list[dict], items: dict,
                  running: tuple[matching.LiveCampaign, ...]) -> list[pricing.ReceiptLine]:
    """The request's lines as the money rules take them: each with its catalog flags and the
    best of the `running` campaigns that covers it."""
    found = [items.get(line.get("sku"), _NOT_IN_CATALOG) for line in lines]
    best = matching.best_for_lines(
        running, [(line.get("sku"), category) for line, (_, _, category) in zip(lines, found)])
    return [pricing.ReceiptLine(line["line_id"], line["amount"], redeemable, accruable,
                                campaign.accrual_bp if campaign else 0,
                                campaign.id if campaign else None)
            for line, (redeemable, accruable, _), campaign in zip(lines, found, best)]


def quote_receipt(session: Session, company_id: str, session_id: str, *, lines: list[dict],
                  redeem_amount: int | None, now: datetime) -> QuoteResource:
    """Price the receipt (docs/api.md#money): what each line may take, what this quote redeems, what
    it earns. A restricted redemption says why and still accrues."""
    work = UnitOfWork.of(session)
    quote_id = new_id()
    skus = sorted({line["sku"] for line in lines if line.get("sku")})
    for _ in range(ATTEMPTS):
        ctx, moved = read_and_move(work, QUOTED, {"company": company_id, "session_id": session_id,
                                                  "quote": None, "new_quote_id": quote_id,
                                                  "skus": skus})
        check_not_expired(ctx, now)
        touched = hold_has_expired(ctx, now)
        if ctx.state != OPEN and not touched:
            raise Conflict(f"a quote needs an OPEN session; this one is {ctx.state}")
        if moved:
            break
    else:
        raise Conflict("the checkout session is changing; try again")

    items = catalog_items(work, company_id, ctx.store_id,
                          ctx.catalog if work.postgresql else None, skus)
    available, customer_spend = ctx.available, ctx.spend
    tier_list = tiers.from_stored(ctx.tiers)
    if _needs_lock(ctx, now, touched):
        account = ledger.lock(work, company_id, ctx.customer_id, now)
        if touched:
            expire_touched_hold(work, company_id, session_id, account, now)
        spend.refresh_noticed(work, account, tier_list, now)
        available, customer_spend = account.available, account.spend

    campaigns = matching.live_campaigns(work, company_id, ctx.campaigns_version, now)
    receipt = receipt_lines(lines, items, campaigns.running(ctx.store_id, now))
    reason = _restriction(ctx, now, available, receipt)
    priced = pricing.price_receipt(
        receipt, max_redeem_bp=ctx.max_redeem_bp,
        accrual_bp=tiers.customer_accrual_bp(tier_list, customer_spend, ctx.accrual_bp),
        available=available, redeem_cap=redeem_amount, redemption_allowed=reason is None)
    # The program's percent as quoted; the customer's tier is decided again at commit, the
    # campaigns matched here are kept for it.
    stored = {"maxRedeemBp": ctx.max_redeem_bp, "accrualBp": ctx.accrual_bp, "lines": [
        {"lineId": line["line_id"], "sku": line.get("sku"), "name": line.get("name"),
         "quantity": line["quantity"], "price": line["price"], "amount": line["amount"],
         "redeemableItem": item.redeemable_item, "accruableItem": item.accruable_item,
         "campaignBp": item.campaign_bp, "campaignId": item.campaign_id}
        for line, item in zip(lines, receipt)]}
    work.defer(INSERT_QUOTE, {
        "company_id": company_id, "id": quote_id, "checkout_session_id": session_id,
        "packed_lines": packed(compact_json(stored).encode("utf-8")),
        "redeem_cap": redeem_amount, "total_amount": priced.total_amount,
        "redeemable": priced.redeemable, "discount": priced.discount, "accrual": priced.accrual,
        "restriction_reason": reason, "created_at": now})
    return QuoteResource(quote_id, session_id, priced.lines, priced.total_amount,
                         priced.redeemable, priced.discount, priced.accrual, reason is None,
                         reason, now)

