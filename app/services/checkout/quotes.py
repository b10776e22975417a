"""Quotes (CONTRACT §6): what each line may take, what this quote redeems, what it earns."""
from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy.orm import Session

from app.models.base import new_id
from app.models.checkout import ACTIVE, OPEN
from app.services.checkout import pricing
from app.services.checkout.holds import expire_touched_hold
from app.services.checkout.resources import QuoteResource
from app.services.checkout.sessions import (ATTEMPTS, check_not_expired, hold_has_expired,
                                            is_stopped, read_context)
from app.services.checkout.statements import CATALOG_FLAGS, INSERT_QUOTE, QUOTED
from app.services.errors import Conflict
from app.services.rewards import expiry, ledger
from app.services.unit_of_work import UnitOfWork

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


def _catalog_flags(work: UnitOfWork, company_id: str, store_id: str | None,
                   lines: list[dict]) -> dict[str, tuple[bool, bool]]:
    skus = sorted({line["sku"] for line in lines if line.get("sku")})
    if store_id is None or not skus:
        return {}
    rows = work.run(CATALOG_FLAGS, {"company": company_id, "store_id": store_id,
                                    "skus": skus})
    return {sku: (redeemable, accruable) for sku, redeemable, accruable in rows}


def quote_receipt(session: Session, company_id: str, session_id: str, *, lines: list[dict],
                  redeem_amount: int | None, now: datetime) -> QuoteResource:
    """Price the receipt (§6): what each line may take, what this quote redeems, what it
    earns. A restricted redemption says why and still accrues."""
    work = UnitOfWork.of(session)
    quote_id = new_id()
    for _ in range(ATTEMPTS):
        ctx = read_context(work, company_id, session_id)
        check_not_expired(ctx, now)
        touched = hold_has_expired(ctx, now)
        if ctx.state != OPEN and not touched:
            raise Conflict(f"a quote needs an OPEN session; this one is {ctx.state}")
        flags = _catalog_flags(work, company_id, ctx.store_id, lines)
        if work.run(QUOTED, {"company": company_id, "session_id": session_id,
                             "seen": ctx.state, "new_quote_id": quote_id}).rowcount:
            break
    else:
        raise Conflict("the checkout session is changing; try again")

    available = ctx.available
    if touched or expiry.changes_balance(ctx, now):
        account = ledger.lock(work, company_id, ctx.customer_id, now)
        if touched:
            expire_touched_hold(work, company_id, session_id, account, now)
        available = account.available

    receipt = [pricing.ReceiptLine(line["line_id"], line["amount"],
                                   *flags.get(line.get("sku"), (True, True))) for line in lines]
    reason = _restriction(ctx, now, available, receipt)
    priced = pricing.price_receipt(receipt, max_redeem_bp=ctx.max_redeem_bp,
                                   accrual_bp=ctx.accrual_bp, available=available,
                                   redeem_cap=redeem_amount, redemption_allowed=reason is None)
    stored = {"maxRedeemBp": ctx.max_redeem_bp, "accrualBp": ctx.accrual_bp, "lines": [
        {"lineId": line["line_id"], "sku": line.get("sku"), "name": line.get("name"),
         "quantity": line["quantity"], "price": line["price"], "amount": line["amount"],
         "redeemableItem": item.redeemable_item, "accruableItem": item.accruable_item}
        for line, item in zip(lines, receipt)]}
    work.defer(INSERT_QUOTE, {
        "company_id": company_id, "id": quote_id, "checkout_session_id": session_id,
        "lines": json.dumps(stored, separators=(",", ":"), ensure_ascii=False),
        "redeem_cap": redeem_amount, "total_amount": priced.total_amount,
        "redeemable": priced.redeemable, "discount": priced.discount, "accrual": priced.accrual,
        "restriction_reason": reason, "created_at": now})
    return QuoteResource(quote_id, session_id, priced.lines, priced.total_amount,
                         priced.redeemable, priced.discount, priced.accrual, reason is None,
                         reason, now)

