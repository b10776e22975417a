"""A receipt at the register (CONTRACT §4–§6): checkout sessions, quotes, commit, sale lookup.
Holds and their release and expiry are in app/services/checkout/holds.py.

This is the register's path, so every statement is built once (SQLAlchemy caches its
compilation) and an operation reads everything it needs in one query. Concurrency: an
operation reads without locking, then moves the session's state with a conditional UPDATE
(`WHERE state = <what it read>`), which takes the session's row lock and re-checks the state
against the latest committed row; if another operation got there first the read is retried.
Lock order everywhere: checkout session row, then reward account row (ledger.lock). The
account is held as a ledger.LockedAccount: no ORM object or flush on this path.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta

from sqlalchemy import and_, bindparam, case, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models import (Cashier, CatalogItem, CheckoutSession, Customer, Hold, Program, Quote,
                        RewardAccount, Sale, SaleLine, Store, Subscription, Terminal)
from app.models.base import new_id
from app.services.rewards import ledger
from app.services.locations import stores
from app.services.checkout import pricing, receipts
from app.services.checkout.resources import (CheckoutSessionResource, HoldResource, QuoteResource,
                                             SaleLineResource, SaleResource)
from app.services.errors import Conflict, Forbidden, InvalidField, NotFound
from app.services.webhooks.outbox import record_event
from app.statements import defer, run

OPEN, HELD, COMMITTED, EXPIRED = "OPEN", "HELD", "COMMITTED", "EXPIRED"
ACTIVE, CAPTURED, RELEASED = "ACTIVE", "CAPTURED", "RELEASED"
# A conditional update that finds the state moved re-reads; more than this is a storm.
ATTEMPTS = 3

SESSIONS, QUOTES, HOLDS = CheckoutSession.__table__, Quote.__table__, Hold.__table__
SALES, SALE_LINES, CATALOG = Sale.__table__, SaleLine.__table__, CatalogItem.__table__
_PROGRAMS, _SUBSCRIPTIONS = Program.__table__, Subscription.__table__
_TERMINALS, _STORES, _ACCOUNTS = Terminal.__table__, Store.__table__, RewardAccount.__table__
_CUSTOMERS, _CASHIERS = Customer.__table__, Cashier.__table__


def session_key():
    return (SESSIONS.c.company_id == bindparam("company"),
            SESSIONS.c.id == bindparam("session_id"))


def _of_session(column, *where):
    """A value of a row belonging to the session, as a correlated scalar subquery."""
    return select(column).where(*where).scalar_subquery()


_OF_SESSION_COMPANY = {table: table.c.company_id == SESSIONS.c.company_id
                       for table in (_TERMINALS, _STORES, HOLDS, _ACCOUNTS, SALES)}
_ACCOUNT_OF_SESSION = (_OF_SESSION_COMPANY[_ACCOUNTS],
                       _ACCOUNTS.c.customer_id == SESSIONS.c.customer_id)

# Everything an operation on a session needs, in one statement: the session, the program's
# percents, the subscription, the named quote, the terminal's state, the store's time zone,
# the active hold, the account's balance and any sale already made for the receipt. The
# optional parts are scalar subqueries rather than outer joins: PostgreSQL plans a nine-way
# join in milliseconds, which on this path costs more than running it.
_CONTEXT = (
    select(SESSIONS.c.id, SESSIONS.c.external_receipt_id, SESSIONS.c.customer_id,
           SESSIONS.c.terminal_id, SESSIONS.c.store_id, SESSIONS.c.state,
           SESSIONS.c.latest_quote_id, SESSIONS.c.expires_at,
           _PROGRAMS.c.accrual_bp, _PROGRAMS.c.max_redeem_bp, _PROGRAMS.c.accrual_delay_days,
           _PROGRAMS.c.hold_ttl_seconds, _SUBSCRIPTIONS.c.status, _SUBSCRIPTIONS.c.access_until,
           QUOTES.c.id.label("quote_id"), QUOTES.c.lines.label("quote_lines"),
           QUOTES.c.discount.label("quote_discount"),
           _of_session(_TERMINALS.c.state, _OF_SESSION_COMPANY[_TERMINALS],
                       _TERMINALS.c.id == SESSIONS.c.terminal_id).label("terminal_state"),
           _of_session(_STORES.c.timezone, _OF_SESSION_COMPANY[_STORES],
                       _STORES.c.id == SESSIONS.c.store_id).label("timezone"),
           _of_session(HOLDS.c.expires_at, _OF_SESSION_COMPANY[HOLDS],
                       HOLDS.c.checkout_session_id == SESSIONS.c.id,
                       HOLDS.c.state == ACTIVE).label("hold_expires_at"),
           _of_session(_ACCOUNTS.c.available, *_ACCOUNT_OF_SESSION).label("available"),
           _of_session(_ACCOUNTS.c.next_maturity_at,
                       *_ACCOUNT_OF_SESSION).label("next_maturity_at"),
           _of_session(SALES.c.id, _OF_SESSION_COMPANY[SALES],
                       SALES.c.external_receipt_id == SESSIONS.c.external_receipt_id)
           .label("sale_id"))
    .select_from(
        SESSIONS
        .join(_PROGRAMS, _PROGRAMS.c.company_id == SESSIONS.c.company_id)
        .join(_SUBSCRIPTIONS, _SUBSCRIPTIONS.c.company_id == SESSIONS.c.company_id)
        .outerjoin(QUOTES, and_(QUOTES.c.company_id == SESSIONS.c.company_id,
                                QUOTES.c.id == bindparam("quote_id"),
                                QUOTES.c.checkout_session_id == SESSIONS.c.id)))
    .where(*session_key())
)

def _of_company(table, column, id_param: str):
    return select(column).where(table.c.company_id == bindparam("company"),
                                table.c.id == bindparam(id_param)).scalar_subquery()


# What a new session must check, in one statement; and the cashier as the catalog knows it.
_CREATION_CONTEXT = select(
    _of_company(_CUSTOMERS, _CUSTOMERS.c.id, "customer_id").label("customer_id"),
    select(SALES.c.id).where(SALES.c.company_id == bindparam("company"),
                             SALES.c.external_receipt_id == bindparam("receipt_id"))
    .scalar_subquery().label("sale_id"),
    _of_company(_TERMINALS, _TERMINALS.c.state, "terminal_id").label("terminal_state"),
    _of_company(_TERMINALS, _TERMINALS.c.store_id, "terminal_id").label("terminal_store_id"),
    _of_company(_STORES, _STORES.c.id, "store_id").label("store_id"),
    *(select(column).where(_CASHIERS.c.company_id == bindparam("company"),
                           _CASHIERS.c.external_id == bindparam("cashier_external_id"))
      .scalar_subquery().label(f"cashier_{column.name}")
      for column in (_CASHIERS.c.id, _CASHIERS.c.name)),
)

_CATALOG_FLAGS = select(CATALOG.c.sku, CATALOG.c.redeemable, CATALOG.c.accruable).where(
    CATALOG.c.company_id == bindparam("company"), CATALOG.c.store_id == bindparam("store_id"),
    CATALOG.c.sku.in_(bindparam("skus", expanding=True)))

# State moves: each takes the session's row lock and succeeds only from the state read.
_QUOTED = update(SESSIONS).where(*session_key(), SESSIONS.c.state == bindparam("seen")).values(
    state=OPEN, latest_quote_id=bindparam("new_quote_id"))
_COMMITTED = update(SESSIONS).where(
    *session_key(), SESSIONS.c.state == bindparam("seen"),
    SESSIONS.c.latest_quote_id == bindparam("quote_id")).values(state=COMMITTED)

_HOLD_RETURNING = (HOLDS.c.id, HOLDS.c.checkout_session_id, HOLDS.c.customer_id, HOLDS.c.amount,
                   HOLDS.c.state, HOLDS.c.expires_at, HOLDS.c.created_at, HOLDS.c.released_at)
_ACTIVE_HOLD_OF_SESSION = (HOLDS.c.company_id == bindparam("company"),
                           HOLDS.c.checkout_session_id == bindparam("session_id"),
                           HOLDS.c.state == ACTIVE)
_CAPTURE_HOLD = (update(HOLDS)
                 .where(*_ACTIVE_HOLD_OF_SESSION, HOLDS.c.expires_at > bindparam("now"))
                 .values(state=CAPTURED).returning(*_HOLD_RETURNING))
# Ends the session's active hold: EXPIRED if its time is up, else RELEASED.
END_HOLD = (update(HOLDS).where(*_ACTIVE_HOLD_OF_SESSION)
            .values(state=case((HOLDS.c.expires_at <= bindparam("now"), EXPIRED), else_=RELEASED),
                    released_at=bindparam("now"), release_reason=bindparam("reason"))
            .returning(*_HOLD_RETURNING))
EXPIRE_HOLD = (update(HOLDS)
                .where(*_ACTIVE_HOLD_OF_SESSION, HOLDS.c.expires_at <= bindparam("now"))
                .values(state=EXPIRED, released_at=bindparam("now"))
                .returning(*_HOLD_RETURNING))

_INSERT_SESSION, _INSERT_QUOTE = insert(SESSIONS), insert(QUOTES)
_INSERT_SALE, _INSERT_SALE_LINES = insert(SALES), insert(SALE_LINES)

_SALE_BY_RECEIPT = select(SALES).where(SALES.c.company_id == bindparam("company"),
                                       SALES.c.external_receipt_id == bindparam("receipt_id"))
_LINES_OF_SALE = (select(SALE_LINES)
                  .where(SALE_LINES.c.company_id == bindparam("company"),
                         SALE_LINES.c.sale_id == bindparam("sale_id"))
                  .order_by(SALE_LINES.c.position))


execute = run  # a prebuilt statement, straight on the driver where it can be (app.statements)


# Reading a session

def read_context(session: Session, company_id: str, session_id: str, quote_id: str | None = None):
    ctx = execute(session, _CONTEXT, {"company": company_id, "session_id": session_id,
                                      "quote_id": quote_id}).first()
    if ctx is None:
        raise NotFound("checkout session")
    return ctx


def read_for_redemption(session: Session, company_id: str, session_id: str, quote_id: str,
                        now: datetime):
    """The context of a hold or a commit: the quote must be the session's, and neither runs
    while the subscription is stopped."""
    ctx = read_context(session, company_id, session_id, quote_id)
    if ctx.quote_id is None:
        raise NotFound("quote")
    if is_stopped(ctx, now):
        raise Forbidden("the subscription is stopped", code="subscription_inactive")
    check_not_expired(ctx, now)
    return ctx


def is_stopped(ctx, now: datetime) -> bool:
    return Subscription.is_stopped(ctx, now)  # the same rule, on the context row


def check_not_expired(ctx, now: datetime) -> None:
    if ctx.state in (OPEN, HELD) and ctx.expires_at <= now:
        raise Conflict("the checkout session has expired; open a new one")


def hold_has_expired(ctx, now: datetime) -> bool:
    """The session is HELD by a hold whose time is up: the first touch releases it."""
    return ctx.state == HELD and ctx.hold_expires_at is not None and ctx.hold_expires_at <= now


def hold_resource(row) -> HoldResource:
    return HoldResource(row.id, row.checkout_session_id, row.customer_id, row.amount, row.state,
                        row.expires_at, row.created_at, row.released_at)


def expire_touched_hold(session: Session, company_id: str, session_id: str,
                        account: ledger.LockedAccount, now: datetime) -> HoldResource:
    """Release the session's expired hold found on first touch. The caller has moved the
    session's state (so holds its row lock) and locked the account."""
    row = execute(session, EXPIRE_HOLD, {"company": company_id, "session_id": session_id,
                                          "now": now}).first()
    if row is None:  # the hold read as expired was replaced meanwhile
        raise Conflict("the session already has an active hold", code="hold_already_active")
    ledger.unreserve(account, row.amount, now)
    hold = hold_resource(row)
    record_event(session, company_id, "checkout.hold.expired", hold.as_json())
    return hold


# Sessions

def create_session(session: Session, company_id: str, *, external_receipt_id: str,
                   customer_id: str, now: datetime, ttl_seconds: int,
                   pos_terminal: stores.RegisterTerminal | None = None, terminal_id: str | None = None,
                   store_id: str | None = None,
                   cashier: dict | None = None) -> CheckoutSessionResource:
    """One receipt of the register for one customer. The terminal comes from the register's
    pos key or `terminalId`; the store is the terminal's, else `storeId`, else none."""
    if pos_terminal is not None and terminal_id is not None and terminal_id != pos_terminal.id:
        raise InvalidField(["body", "terminalId"],
                           "differs from the terminal named by X-Loyalty-Pos-Key", "value_error")
    found = execute(session, _CREATION_CONTEXT, {
        "company": company_id, "customer_id": customer_id, "receipt_id": external_receipt_id,
        "terminal_id": None if pos_terminal else terminal_id, "store_id": store_id,
        "cashier_external_id": cashier["external_id"] if cashier else None}).one()
    if pos_terminal is not None:
        terminal_id, store_id = pos_terminal.id, pos_terminal.store_id
    elif terminal_id is not None:
        if found.terminal_state is None:
            raise NotFound("terminal")
        if found.terminal_state != ACTIVE:
            raise Forbidden("the terminal is not active", code="terminal_inactive")
        store_id = found.terminal_store_id
    elif store_id is not None and found.store_id is None:
        raise NotFound("store")
    if found.customer_id is None:
        raise NotFound("customer")
    if found.sale_id is not None:
        raise Conflict("this receipt already has a committed sale",
                       code="receipt_already_committed")
    cashier_id = found.cashier_id
    if cashier is not None and (cashier_id is None or found.cashier_name != cashier["name"]):
        cashier_id = stores.upsert_cashier(session, company_id, cashier["external_id"],
                                              cashier["name"], now).id  # new, or renamed
    row = CheckoutSessionResource(
        id=new_id(), external_receipt_id=external_receipt_id, customer_id=customer_id,
        terminal_id=terminal_id, store_id=store_id, cashier_id=cashier_id, state=OPEN,
        expires_at=now + timedelta(seconds=ttl_seconds), created_at=now)
    defer(session, _INSERT_SESSION, {**row.__dict__, "company_id": company_id,
                                     "latest_quote_id": None})
    return row


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


def _catalog_flags(session: Session, company_id: str, store_id: str | None,
                   lines: list[dict]) -> dict[str, tuple[bool, bool]]:
    skus = sorted({line["sku"] for line in lines if line.get("sku")})
    if store_id is None or not skus:
        return {}
    rows = execute(session, _CATALOG_FLAGS, {"company": company_id, "store_id": store_id,
                                             "skus": skus})
    return {sku: (redeemable, accruable) for sku, redeemable, accruable in rows}


def quote_receipt(session: Session, company_id: str, session_id: str, *, lines: list[dict],
                  redeem_amount: int | None, now: datetime) -> QuoteResource:
    """Price the receipt (§6): what each line may take, what this quote redeems, what it
    earns. A restricted redemption says why and still accrues."""
    quote_id = new_id()
    for _ in range(ATTEMPTS):
        ctx = read_context(session, company_id, session_id)
        check_not_expired(ctx, now)
        touched = hold_has_expired(ctx, now)
        if ctx.state != OPEN and not touched:
            raise Conflict(f"a quote needs an OPEN session; this one is {ctx.state}")
        flags = _catalog_flags(session, company_id, ctx.store_id, lines)
        if execute(session, _QUOTED, {"company": company_id, "session_id": session_id,
                                      "seen": ctx.state, "new_quote_id": quote_id}).rowcount:
            break
    else:
        raise Conflict("the checkout session is changing; try again")

    available = ctx.available
    if touched or (ctx.next_maturity_at is not None and ctx.next_maturity_at <= now):
        account = ledger.lock(session, company_id, ctx.customer_id, now)
        if touched:
            expire_touched_hold(session, company_id, session_id, account, now)
        ledger.save(session, account)
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
    defer(session, _INSERT_QUOTE, {
        "company_id": company_id, "id": quote_id, "checkout_session_id": session_id,
        "lines": json.dumps(stored, separators=(",", ":"), ensure_ascii=False),
        "redeem_cap": redeem_amount, "total_amount": priced.total_amount,
        "redeemable": priced.redeemable, "discount": priced.discount, "accrual": priced.accrual,
        "restriction_reason": reason, "created_at": now})
    return QuoteResource(quote_id, session_id, priced.lines, priced.total_amount,
                         priced.redeemable, priced.discount, priced.accrual, reason is None,
                         reason, now)


# Commit

def commit_sale(session: Session, company_id: str, session_id: str, *, quote_id: str,
                now: datetime) -> SaleResource:
    """Fix the sale: capture the hold (a REDEMPTION), spread it over the lines, write the
    ACCRUAL (PENDING until committedAt + accrualDelayDays; ACTIVE at once when that is 0).
    One sale per receipt, ever."""
    for _ in range(ATTEMPTS):
        ctx = read_for_redemption(session, company_id, session_id, quote_id, now)
        if ctx.state not in (OPEN, HELD):
            raise Conflict(f"a commit needs an OPEN or HELD session; this one is {ctx.state}")
        if ctx.latest_quote_id != quote_id:
            raise Conflict("commit the session's latest quote")
        if ctx.sale_id is not None:
            raise Conflict("this receipt already has a committed sale",
                           code="receipt_already_committed")
        if execute(session, _COMMITTED, {"company": company_id, "session_id": session_id,
                                         "seen": ctx.state, "quote_id": quote_id}).rowcount:
            break
    else:
        raise Conflict("the checkout session is changing; try again")

    key = {"company": company_id, "session_id": session_id, "now": now}
    captured = execute(session, _CAPTURE_HOLD, key).first() if ctx.state == HELD else None
    account = ledger.lock(session, company_id, ctx.customer_id, now)
    if ctx.state == HELD and captured is None:  # its time ran out: released, not captured
        expire_touched_hold(session, company_id, session_id, account, now)
    redeemed = captured.amount if captured is not None else 0

    quote = json.loads(ctx.quote_lines)
    lines = quote["lines"]
    priced = pricing.price_commit(
        [pricing.ReceiptLine(line["lineId"], line["amount"], line["redeemableItem"],
                             line["accruableItem"]) for line in lines],
        max_redeem_bp=quote["maxRedeemBp"], accrual_bp=quote["accrualBp"], redeemed=redeemed)
    sale_id = new_id()
    if redeemed:
        ledger.post(session, account, type="REDEMPTION", amount=-redeemed, now=now,
                    sale_id=sale_id, hold_id=captured.id, from_reserved=True)
    delay = ctx.accrual_delay_days
    accrual_available_at = now + timedelta(days=delay)
    if priced.accrual:
        ledger.post(session, account, type="ACCRUAL", amount=priced.accrual, now=now,
                    status="PENDING" if delay else "ACTIVE", available_at=accrual_available_at,
                    sale_id=sale_id)
    text = receipts.receipt_text(redeemed=redeemed, accrued=priced.accrual,
                                 accrual_pending=delay > 0,
                                 accrual_available_at=accrual_available_at,
                                 balance_after=account.available, timezone=ctx.timezone)
    sale = SaleResource(
        id=sale_id, checkout_session_id=session_id, external_receipt_id=ctx.external_receipt_id,
        customer_id=ctx.customer_id, state=COMMITTED, total_amount=priced.total_amount,
        redeemed=redeemed, accrued=priced.accrual, accrual_available_at=accrual_available_at,
        lines=tuple(SaleLineResource(line["lineId"], line["sku"], line["quantity"], line["amount"],
                                     p.discount, p.accrual, 0)
                    for line, p in zip(lines, priced.lines)),
        receipt_text=tuple(text), committed_at=now)
    try:
        execute(session, _INSERT_SALE, {
            "company_id": company_id, "id": sale_id, "checkout_session_id": session_id,
            "external_receipt_id": sale.external_receipt_id, "customer_id": sale.customer_id,
            "quote_id": quote_id, "state": COMMITTED, "total_amount": sale.total_amount,
            "redeemed": redeemed, "accrued": sale.accrued,
            "accrual_available_at": accrual_available_at, "committed_at": now,
            "receipt_text": json.dumps(text, ensure_ascii=False), "created_at": now})
    except IntegrityError:  # another session of the same receipt committed first
        raise Conflict("this receipt already has a committed sale",
                       code="receipt_already_committed") from None
    defer(session, _INSERT_SALE_LINES, [
        {"company_id": company_id, "sale_id": sale_id, "line_id": line["lineId"],
         "position": position, "sku": line["sku"], "name": line["name"],
         "quantity": line["quantity"], "amount": line["amount"], "discount": p.discount,
         "accrual": p.accrual, "returned_quantity": 0, "restored_redemption": 0,
         "reversed_accrual": 0}
        for position, (line, p) in enumerate(zip(lines, priced.lines))])
    ledger.save(session, account)
    record_event(session, company_id, "sale.committed", sale.as_json())
    session.flush()
    return sale


# Sales

def sale_resource(sale, lines) -> SaleResource:
    return SaleResource(
        id=sale.id, checkout_session_id=sale.checkout_session_id,
        external_receipt_id=sale.external_receipt_id, customer_id=sale.customer_id,
        state=sale.state, total_amount=sale.total_amount, redeemed=sale.redeemed,
        accrued=sale.accrued, accrual_available_at=sale.accrual_available_at,
        lines=tuple(SaleLineResource(line.line_id, line.sku, line.quantity, line.amount,
                                     line.discount, line.accrual, line.returned_quantity)
                    for line in lines),
        receipt_text=tuple(json.loads(sale.receipt_text or "[]")), committed_at=sale.committed_at)


def lines_of_sale(session: Session, company_id: str, sale_id: str) -> list:
    return list(execute(session, _LINES_OF_SALE, {"company": company_id, "sale_id": sale_id}))


def sale_by_receipt(session: Session, company_id: str, external_receipt_id: str) -> SaleResource:
    sale = execute(session, _SALE_BY_RECEIPT, {"company": company_id,
                                               "receipt_id": external_receipt_id}).first()
    if sale is None:
        raise NotFound("sale")
    return sale_resource(sale, lines_of_sale(session, company_id, sale.id))
