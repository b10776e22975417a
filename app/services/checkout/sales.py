"""Sales (docs/api.md#resources, #states, #money): committing a receipt, and looking a sale up by
its receipt."""
from __future__ import annotations

import json
from collections import namedtuple
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models.base import new_id
from app.models.checkout import COMMITTED, HELD, OPEN
from app.services.checkout import pricing, receipts
from app.services.checkout.holds import expire_touched_hold
from app.services.checkout.resources import SaleLineResource, SaleResource
from app.services.checkout.sessions import (ATTEMPTS, check_for_redemption, locked_account,
                                            read_and_move)
from app.services.checkout.statements import (CAPTURE_HOLD, COMMITTED_MOVE, INSERT_SALE,
                                              INSERT_SALE_LINES, LINES_OF_SALE, SALE_BY_RECEIPT)
from app.services.errors import Conflict, NotFound, conflict_of_constraint
from app.services.rewards import bounds, ledger, lots, spend, tiers
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event
from app.wire import unpacked

# Commit

@conflict_of_constraint("uq_sales_company_id_external_receipt_id")
def receipt_committed(sale_id: str | None = None) -> Conflict:
    """One sale per receipt, ever: found by the context's read (with the sale's id, so the
    register can reconcile), or by the receipt's unique constraint."""
    return Conflict("this receipt already has a committed sale", code="receipt_already_committed",
                    **({} if sale_id is None else {"saleId": sale_id}))


def commit_sale(session: Session, company_id: str, session_id: str, *, quote_id: str,
                now: datetime) -> SaleResource:
    """Fix the sale: capture the hold (a REDEMPTION), spread it over the lines, write the
    ACCRUAL (PENDING until committedAt + accrualDelayDays; ACTIVE at once when that is 0).
    One sale per receipt, ever."""
    work = UnitOfWork.of(session)
    for _ in range(ATTEMPTS):
        ctx, moved = read_and_move(work, COMMITTED_MOVE, {
            "company": company_id, "session_id": session_id, "quote": quote_id, "now": now})
        check_for_redemption(ctx, now)
        if ctx.state not in (OPEN, HELD):
            raise Conflict(f"a commit needs an OPEN or HELD session; this one is {ctx.state}")
        if ctx.latest_quote_id != quote_id:
            raise Conflict("commit the session's latest quote")
        if ctx.sale_id is not None:
            raise receipt_committed(ctx.sale_id)
        if moved:
            break
    else:
        raise Conflict("the checkout session is changing; try again")

    captured = _captured(work, ctx, {"company": company_id, "session_id": session_id, "now": now})
    account = ledger.lock(work, company_id, ctx.customer_id, now, locked_account(work, ctx))
    if ctx.state == HELD and captured is None:  # its time ran out: released, not captured
        expire_touched_hold(work, company_id, session_id, account, now)
    redeemed = captured.amount if captured is not None else 0
    tier_list = tiers.from_stored(ctx.tiers)
    # A move by old sales leaving is noticed with the sale's own, once, after sale.committed.
    spend_before = spend.refresh_for_notice(work, account, now)

    quote = json.loads(ctx.quote_lines if ctx.quote_packed_lines is None
                       else unpacked(ctx.quote_packed_lines))
    lines = quote["lines"]
    # The tier is decided again here, on the spend before this sale (the sale that crosses a
    # threshold earns at the old rate); the campaigns are those the quote showed.
    priced = pricing.price_commit(
        [pricing.ReceiptLine(line["lineId"], line["amount"], line["redeemableItem"],
                             line["accruableItem"], line.get("campaignBp", 0),
                             line.get("campaignId")) for line in lines],
        max_redeem_bp=quote["maxRedeemBp"],
        accrual_bp=tiers.customer_accrual_bp(tier_list, account.spend, quote["accrualBp"]),
        redeemed=redeemed)
    sale_id = new_id()
    redemption_expires_at = None
    if redeemed:
        ledger.post(account, type="REDEMPTION", amount=-redeemed, now=now,
                    sale_id=sale_id, hold_id=captured.id, from_reserved=True)
        redemption_expires_at = lots.earliest_end(account.last_spent)

    return book_sale(work, account, sale={
        "company_id": company_id, "id": sale_id, "checkout_session_id": session_id,
        "external_receipt_id": ctx.external_receipt_id, "customer_id": ctx.customer_id,
        "quote_id": quote_id, "redeemed": redeemed,
        "accrual_available_at": now + timedelta(days=ctx.accrual_delay_days),
        "committed_at": now, "redemption_expires_at": redemption_expires_at},
        lines=lines, priced=priced, tier_list=tier_list, spend_before=spend_before,
        timezone=ctx.timezone, now=now)


def insert_sale(work: UnitOfWork, row: dict) -> None:
    """The sale's row. On PostgreSQL it goes with the commit's writes: another sale of the same
    receipt (online or offline) that committed first fails it there, where the receipt's
    unique constraint answers receipt_committed (errors.py)."""
    if work.postgresql:
        work.defer(INSERT_SALE, row)
        return
    try:
        work.run(INSERT_SALE, row)
    except IntegrityError:
        raise receipt_committed() from None


def book_sale(work: UnitOfWork, account, *, sale: dict, lines: list[dict],
              priced: pricing.PricedReceipt, tier_list, spend_before: int, timezone: str | None,
              now: datetime) -> SaleResource:
    """What every sale does once its receipt is priced and its redemption (if any) posted:
    the ACCRUAL, cut to what the account's bound leaves (the sale is made whatever the
    receipt), PENDING until `accrual_available_at`, else ACTIVE at once with its lot living
    from that moment; the receipt's text; the sale's row and its lines; `sale.committed`; and
    its spend toward tiers, counted at `committed_at`, the moment the sale was made. `sale`
    holds the row's own columns; `lines` the quote's stored lines."""
    sale_id, sold_at = sale["id"], sale["committed_at"]
    available_at = sale["accrual_available_at"]
    pending = available_at > now
    priced = pricing.cut_accrual(priced, bounds.credit_room(account, pending=pending))
    if priced.accrual:
        ledger.post(account, type="ACCRUAL", amount=priced.accrual, now=now,
                    status="PENDING" if pending else "ACTIVE", available_at=available_at,
                    sale_id=sale_id,
                    expires_at=lots.lifetime_end(available_at, account.points_lifetime_days))
    text = receipts.receipt_text(redeemed=sale["redeemed"], accrued=priced.accrual,
                                 accrual_pending=pending, accrual_available_at=available_at,
                                 balance_after=account.available, timezone=timezone)
    offline = sale["checkout_session_id"] is None
    resource = SaleResource(
        id=sale_id, checkout_session_id=sale["checkout_session_id"],
        external_receipt_id=sale["external_receipt_id"], customer_id=sale["customer_id"],
        state=COMMITTED, total_amount=priced.total_amount, redeemed=sale["redeemed"],
        accrued=priced.accrual, accrual_available_at=available_at,
        lines=tuple(SaleLineResource(line["lineId"], line["sku"], line["quantity"], line["amount"],
                                     p.discount, p.accrual, 0, p.accrual_bp, p.campaign_id)
                    for line, p in zip(lines, priced.lines)),
        receipt_text=tuple(text), committed_at=now, offline=offline, sold_at=sold_at)
    sale_spend = sum(tiers.line_spend(p.amount, p.discount, line["quantity"], 0)
                     for line, p in zip(lines, priced.lines))
    insert_sale(work, {**sale, "state": COMMITTED, "total_amount": resource.total_amount,
            "accrued": resource.accrued, "receipt_text": json.dumps(text, ensure_ascii=False),
            "created_at": now, "spend": sale_spend})
    work.defer(INSERT_SALE_LINES, [
        {"company_id": sale["company_id"], "sale_id": sale_id, "line_id": line["lineId"],
         "position": position, "sku": line["sku"], "name": line["name"],
         "quantity": line["quantity"], "amount": line["amount"], "discount": p.discount,
         "accrual": p.accrual, "returned_quantity": 0, "restored_redemption": 0,
         "reversed_accrual": 0, "accrual_bp": p.accrual_bp, "campaign_id": p.campaign_id}
        for position, (line, p) in enumerate(zip(lines, priced.lines))])
    record_event(work.session, sale["company_id"], "sale.committed", resource.as_json())
    # A sale made before the tier window began (sent long after it) adds nothing to it.
    if not spend.is_stale(sold_at, account.tier_window_days, now):
        spend.add_sale(account, sale_spend, sold_at)
    spend.notice_move(work.session, account, tier_list, spend_before)
    return resource


Captured = namedtuple("Captured", "id amount")


def _captured(work: UnitOfWork, ctx, key: dict) -> Captured | None:
    """The session's live hold, captured: by the move's own statement on PostgreSQL
    (statements.COMMITTED_MOVE), after it on SQLite. None when it had none, or its time ran
    out."""
    if work.postgresql:
        return None if ctx.captured_id is None else Captured(ctx.captured_id, ctx.captured_amount)
    return work.run(CAPTURE_HOLD, key).first() if ctx.state == HELD else None


# Sales

def sale_resource(sale, lines) -> SaleResource:
    offline = sale.checkout_session_id is None
    return SaleResource(
        id=sale.id, checkout_session_id=sale.checkout_session_id,
        external_receipt_id=sale.external_receipt_id, customer_id=sale.customer_id,
        state=sale.state, total_amount=sale.total_amount, redeemed=sale.redeemed,
        accrued=sale.accrued, accrual_available_at=sale.accrual_available_at,
        lines=tuple(SaleLineResource(line.line_id, line.sku, line.quantity, line.amount,
                                     line.discount, line.accrual, line.returned_quantity,
                                     line.accrual_bp, line.campaign_id)
                    for line in lines),
        receipt_text=tuple(json.loads(sale.receipt_text or "[]")),
        # An offline sale's committed_at column is when it was made (models/checkout.py).
        committed_at=sale.created_at if offline else sale.committed_at,
        offline=offline, sold_at=sale.committed_at)


def lines_of_sale(work: UnitOfWork, company_id: str, sale_id: str) -> list:
    return list(work.run(LINES_OF_SALE, {"company": company_id, "sale_id": sale_id}))


def sale_by_receipt(session: Session, company_id: str, external_receipt_id: str) -> SaleResource:
    work = UnitOfWork.of(session)
    sale = work.run(SALE_BY_RECEIPT, {"company": company_id,
                                      "receipt_id": external_receipt_id}).first()
    if sale is None:
        raise NotFound("sale")
    return sale_resource(sale, lines_of_sale(work, company_id, sale.id))

