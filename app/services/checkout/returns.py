"""Returns of sale lines (docs/api.md#money): give back the bonuses spent on the returned part and
take back those earned on it, as the program's clawback policy says.

Per line the shares are the line's discount and accrual times returned/sold quantity,
rounded down, and the return that empties a line takes exactly what is left of them, so a
fully returned sale nets to zero. The taking back cancels the sale's pending accrual first
(a PENDING reversal that matures together with it), then debits the active balance:
UNLIMITED into debt, WITHIN_BALANCE down to zero, ONLY_PENDING not at all; what is not taken
is `forgivenAccrual`.
"""
from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from app.models import LedgerEntry, Program, Return
from app.models.base import new_id
from app.models.checkout import PARTIALLY_RETURNED, RETURNED
from app.services.checkout import pricing
from app.services.checkout.resources import ReturnLineResource, ReturnResource
from app.services.checkout.sales import lines_of_sale
from app.services.checkout.statements import SALE_LINES, SALES
from app.services.errors import Conflict, InvalidField, NotFound
from app.services.rewards import bounds, ledger, spend, tiers
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event
from app.wire import Balance

_PROGRAMS, _RETURNS, _LEDGER = Program.__table__, Return.__table__, LedgerEntry.__table__

# The sale's row lock serialises returns of one sale: each sees what the last one left.
_LOCKED_SALE = (select(SALES.c.id, SALES.c.customer_id, SALES.c.state,
                       SALES.c.accrual_available_at, SALES.c.committed_at, SALES.c.spend,
                       SALES.c.redemption_expires_at,
                       _PROGRAMS.c.clawback_policy, _PROGRAMS.c.tiers)
                .join(_PROGRAMS, _PROGRAMS.c.company_id == SALES.c.company_id)
                .where(SALES.c.company_id == bindparam("company"),
                       SALES.c.id == bindparam("sale_id"))
                .with_for_update(of=SALES))
_PENDING_OF_SALE = select(func.coalesce(func.sum(_LEDGER.c.amount), 0)).where(
    _LEDGER.c.company_id == bindparam("company"), _LEDGER.c.customer_id == bindparam("customer_id"),
    _LEDGER.c.sale_id == bindparam("sale_id"), _LEDGER.c.status == "PENDING")
_RETURN_LINE = (update(SALE_LINES)
                .where(SALE_LINES.c.company_id == bindparam("b_company_id"),
                       SALE_LINES.c.sale_id == bindparam("b_sale_id"),
                       SALE_LINES.c.line_id == bindparam("b_line_id"))
                .values(returned_quantity=bindparam("b_returned_quantity"),
                        restored_redemption=bindparam("b_restored_redemption"),
                        reversed_accrual=bindparam("b_reversed_accrual")))
_SALE_STATE = (update(SALES).where(SALES.c.company_id == bindparam("company"),
                                   SALES.c.id == bindparam("sale_id"))
               .values(state=bindparam("b_state"), spend=bindparam("b_spend")))
_INSERT_RETURN = insert(_RETURNS)


def _checked(requested: list[dict], sold: dict) -> None:
    seen = set()
    for position, line in enumerate(requested):
        if line["line_id"] not in sold:
            raise InvalidField(["body", "lines", position, "lineId"], "no such line in the sale",
                               "value_error")
        if line["line_id"] in seen:
            raise InvalidField(["body", "lines", position, "lineId"], "the line is given twice",
                               "value_error")
        seen.add(line["line_id"])
    for line in requested:
        left = sold[line["line_id"]].quantity - sold[line["line_id"]].returned_quantity
        if line["quantity"] > left:
            raise Conflict(f"line {line['line_id']}: more than is left of it is returned",
                           code="return_exceeds_sale")


def return_lines(session: Session, company_id: str, sale_id: str, *, lines: list[dict],
                 now: datetime) -> ReturnResource:
    """Return `lines` ({line_id, quantity in thousandths}) of a sale; cumulative returns never
    go beyond what was sold (409 return_exceeds_sale)."""
    work = UnitOfWork.of(session)
    sale = work.run(_LOCKED_SALE, {"company": company_id, "sale_id": sale_id}).first()
    if sale is None:
        raise NotFound("sale")
    all_lines = lines_of_sale(work, company_id, sale_id)
    sold = {line.line_id: line for line in all_lines}
    _checked(lines, sold)

    shares = []
    for line in lines:
        was = sold[line["line_id"]]
        args = (was.quantity, was.returned_quantity, line["quantity"])
        shares.append(ReturnLineResource(
            line["line_id"], line["quantity"],
            pricing.return_share(was.discount, *args, already_taken=was.restored_redemption),
            pricing.return_share(was.accrual, *args, already_taken=was.reversed_accrual)))
    restored = sum(share.restored_redemption for share in shares)
    reversing = sum(share.reversed_accrual for share in shares)

    return_id = new_id()
    entry = {"now": now, "sale_id": sale_id, "return_id": return_id}
    account = ledger.lock(work, company_id, sale.customer_id, now)
    # Before the sale's own new spend is written: the refresh reads the sales as they were.
    spend_before = spend.refresh_for_notice(work, account, now)
    # Cut at the bound as an accrual is, and the return goes through; the total says what
    # was given back, the lines their shares (docs/api.md#money).
    restored = min(restored, bounds.credit_room(account))
    if restored:
        # It expires with the earliest lot the redemption took from: a return never lengthens
        # a point's life (docs/api.md#expiry).
        ledger.post(account, type="REDEMPTION_RESTORE", amount=restored,
                    expires_at=sale.redemption_expires_at, **entry)
    pending_left = 0
    if reversing and sale.accrual_available_at > now:
        # int(): PostgreSQL sums bigint as numeric.
        pending_left = int(work.run(_PENDING_OF_SALE, {
            "company": company_id, "customer_id": sale.customer_id, "sale_id": sale_id}).scalar())
    taken = pricing.clawback(sale.clawback_policy, reversing, pending_left, account.available,
                             debt_room=bounds.debt_room(account.available))
    if taken.from_pending:
        ledger.post(account, type="ACCRUAL_REVERSAL", amount=-taken.from_pending,
                    status="PENDING", available_at=sale.accrual_available_at, **entry)
    if taken.from_available:
        ledger.post(account, type="ACCRUAL_REVERSAL", amount=-taken.from_available,
                    **entry)

    returned = {share.line_id: share for share in shares}
    work.defer(_RETURN_LINE, [
        {"b_company_id": company_id, "b_sale_id": sale_id, "b_line_id": line_id,
         "b_returned_quantity": sold[line_id].returned_quantity + share.quantity,
         "b_restored_redemption": sold[line_id].restored_redemption + share.restored_redemption,
         "b_reversed_accrual": sold[line_id].reversed_accrual + share.reversed_accrual}
        for line_id, share in returned.items()])
    emptied = all(line.returned_quantity + (returned[line.line_id].quantity
                                            if line.line_id in returned else 0) == line.quantity
                  for line in all_lines)
    state = RETURNED if emptied else PARTIALLY_RETURNED
    sale_spend = sum(tiers.line_spend(
        line.amount, line.discount, line.quantity,
        line.returned_quantity + (returned[line.line_id].quantity if line.line_id in returned else 0))
        for line in all_lines)
    work.defer(_SALE_STATE, {"company": company_id, "sale_id": sale_id, "b_state": state,
                             "b_spend": sale_spend})
    result = ReturnResource(
        id=return_id, sale_id=sale_id, customer_id=sale.customer_id, lines=tuple(shares),
        restored_redemption=restored, reversed_accrual=taken.from_pending + taken.from_available,
        forgiven_accrual=taken.forgiven, sale_state=state,
        balance=Balance.of(account), created_at=now)
    work.defer(_INSERT_RETURN, {
        "company_id": company_id, "id": return_id, "sale_id": sale_id, "created_at": now,
        "lines": json.dumps([share.__dict__ for share in shares], separators=(",", ":")),
        "restored_redemption": restored, "reversed_accrual": result.reversed_accrual,
        "forgiven_accrual": taken.forgiven})
    record_event(session, company_id, "sale.returned", result.as_json())
    _less_spend(work, account, sale, sale_spend, spend_before, now)
    return result


def _less_spend(work: UnitOfWork, account, sale, sale_spend: int, spend_before: int,
                now: datetime) -> None:
    """The tier's spend loses what the return took from a sale it counts (those from its
    oldest one on: the window read with the sale may have changed since); a move down is
    noticed here."""
    if account.spend_oldest_at is not None and sale.committed_at >= account.spend_oldest_at:
        spend.take_back(work, account, sale_spend - sale.spend, now)
    spend.notice_move(work.session, account, tiers.from_stored(sale.tiers), spend_before)

