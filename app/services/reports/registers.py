"""The shift reconciliation (docs/api.md#reports): sales, discounts, accruals and returns by store,
terminal, cashier or Moscow day, for the store manager to hold against the till."""
from __future__ import annotations

import json
from itertools import groupby

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from app.models import Cashier, CheckoutSession, Return, Sale, SaleLine, Store, Terminal
from app.services.reports.periods import DAY, Period, as_int, moscow_period, snapshot
from app.services.rewards.tiers import line_spend

GROUPS = ("store", "terminal", "cashier", "day")
FIELDS = ("sales", "loyalty_sales", "offline_sales", "amount", "discount", "accrued", "returns",
          "returned_amount", "clawed_back")

_SALES, _SESSIONS, _RETURNS = Sale.__table__, CheckoutSession.__table__, Return.__table__
_LINES = SaleLine.__table__
# A sale's register: its session's, or, made offline (no session), its own.
_WHERE = {name: func.coalesce(_SESSIONS.c[column], _SALES.c[column])
          for name, column in (("store", "store_id"), ("terminal", "terminal_id"),
                               ("cashier", "cashier_id"))}
_NAMED = {"store": Store, "terminal": Terminal, "cashier": Cashier}
_SALES_A_BATCH = 500


def register_totals(session: Session, company_id: str, period: Period, group_by: str,
                    only: dict[str, str], *, timeout_seconds: int | None = None) -> list[dict]:
    """One item per group with sales or returns in the period, sorted by key (null last).
    `only` narrows to a store, terminal and/or cashier ({"store": id, …}): the sale's.
    A sale counts in the period it was made in (an offline sale's soldAt: its committed_at);
    a return in the period it was made in, in its sale's group (with `day`, the return's own
    day)."""
    snapshot(session, timeout_seconds)
    groups: dict[str | None, dict] = {}

    def group(key):
        return groups.setdefault(key, dict.fromkeys(FIELDS, 0))

    sale_key = (moscow_period(_SALES.c.committed_at, DAY) if group_by == DAY
                else _WHERE[group_by])
    narrowed = [_WHERE[name] == value for name, value in only.items()]
    for key, sales, loyalty, offline, amount, discount, accrued in session.execute(
            select(sale_key, func.count(), func.count(_SALES.c.customer_id),
                   func.count(case((_SALES.c.checkout_session_id.is_(None), 1))),
                   func.sum(_SALES.c.total_amount - _SALES.c.redeemed),
                   func.sum(_SALES.c.redeemed), func.sum(_SALES.c.accrued))
            .select_from(_of_session(_SALES))
            .where(_SALES.c.company_id == company_id, _SALES.c.committed_at >= period.start,
                   _SALES.c.committed_at < period.end, *narrowed)
            .group_by(sale_key)):
        totals = group(key)
        totals.update(sales=sales, loyalty_sales=loyalty, offline_sales=offline,
                      amount=as_int(amount),
                      discount=as_int(discount), accrued=as_int(accrued))
    return_key = (moscow_period(_RETURNS.c.created_at, DAY) if group_by == DAY
                  else _WHERE[group_by])
    for key, refunded, clawed_back in _returned(session, company_id, period, return_key, narrowed):
        totals = group(key)
        totals["returns"] += 1
        totals["returned_amount"] += refunded
        totals["clawed_back"] += clawed_back
    names = _names(session, company_id, group_by, [key for key in groups if key is not None])
    ordered = sorted(groups, key=lambda key: (key is None, key or ""))
    return [{"key": key, "name": names.get(key), **groups[key]} for key in ordered]


def _of_session(table):
    sales = table.join(_SALES, (_SALES.c.company_id == table.c.company_id)
                       & (_SALES.c.id == table.c.sale_id)) if table is not _SALES else _SALES
    return sales.outerjoin(_SESSIONS, (_SESSIONS.c.company_id == _SALES.c.company_id)
                           & (_SESSIONS.c.id == _SALES.c.checkout_session_id))


def _returned(session: Session, company_id: str, period: Period, key, narrowed):
    """(group key, money refunded, bonuses taken back) of each return made in the period.

    The money a return refunds is what it takes off its lines' kept amount − discount:
    floor(net × kept / sold) before it less the same after it, so the returns of a line add up
    to exactly its net once it is all returned. That needs the line's earlier returns, so every
    return of a sale returned in the period is read, in order, a batch of sales at a time
    (memory stays flat however long the period)."""
    returned_in_period = select(_RETURNS.c.sale_id).where(
        _RETURNS.c.company_id == company_id, _RETURNS.c.created_at >= period.start,
        _RETURNS.c.created_at < period.end)
    rows = session.execute(
        select(_RETURNS.c.sale_id, _RETURNS.c.created_at, _RETURNS.c.lines,
               _RETURNS.c.reversed_accrual, key)
        .select_from(_of_session(_RETURNS))
        .where(_RETURNS.c.company_id == company_id, _RETURNS.c.sale_id.in_(returned_in_period),
               _RETURNS.c.created_at < period.end, *narrowed)
        .order_by(_RETURNS.c.sale_id, _RETURNS.c.created_at, _RETURNS.c.id)
        .execution_options(yield_per=_SALES_A_BATCH * 4))
    batch: list[tuple[str, list]] = []
    for sale_id, returns in groupby(rows, key=lambda row: row.sale_id):
        batch.append((sale_id, list(returns)))
        if len(batch) == _SALES_A_BATCH:
            yield from _refunds(session, company_id, period, batch)
            batch = []
    yield from _refunds(session, company_id, period, batch)


def _refunds(session: Session, company_id: str, period: Period, batch):
    if not batch:
        return
    lines = {(sale_id, line_id): (amount - discount, quantity)
             for sale_id, line_id, amount, discount, quantity in session.execute(
                 select(_LINES.c.sale_id, _LINES.c.line_id, _LINES.c.amount, _LINES.c.discount,
                        _LINES.c.quantity)
                 .where(_LINES.c.company_id == company_id,
                        _LINES.c.sale_id.in_([sale_id for sale_id, _ in batch])))}
    for sale_id, returns in batch:
        kept_returned: dict[str, int] = {}
        for row in returns:
            refunded = 0
            for share in json.loads(row.lines):
                net, sold = lines[(sale_id, share["line_id"])]
                before = kept_returned.get(share["line_id"], 0)
                after = kept_returned[share["line_id"]] = before + share["quantity"]
                refunded += line_spend(net, 0, sold, before) - line_spend(net, 0, sold, after)
            if row.created_at >= period.start:
                yield row[4], refunded, row.reversed_accrual


def _names(session: Session, company_id: str, group_by: str, keys: list[str]) -> dict:
    model = _NAMED.get(group_by)
    if model is None or not keys:
        return {}
    return dict(session.execute(select(model.id, model.name).where(
        model.company_id == company_id, model.id.in_(keys))).all())
