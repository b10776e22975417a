"""Checkout sessions (docs/api.md#resources, #states): opening one, and reading one with everything
an operation on it needs.

Concurrency: an operation reads without locking, then moves the session's state with a
conditional UPDATE (`WHERE state = <what it read>`), which takes the session's row lock and
re-checks the state against the latest committed row; if another operation got there first
the read is retried (ATTEMPTS). On PostgreSQL the read and the move are one statement
(statements.StateMove), so the move comes before the operation's checks of what it read: a
check that fails raises, and the request's rollback takes the move back with the rest.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from operator import attrgetter

from sqlalchemy.orm import Session

from app.models import Subscription
from app.models.base import new_id
from app.models.checkout import ACTIVE, HELD, OPEN
from app.services.checkout.resources import CheckoutSessionResource
from app.services.checkout.statements import (CONTEXT, CREATION_CONTEXT, INSERT_SESSION,
                                              LOCKED_NAMES, StateMove)
from app.services.errors import Conflict, Forbidden, InvalidField, NotFound
from app.services.locations import stores
from app.services.unit_of_work import UnitOfWork

# A conditional update that finds the state moved re-reads; more than this is a storm.
ATTEMPTS = 3
_LOCKED_ROW = attrgetter(*LOCKED_NAMES)  # the locked account's values, in LOCK's order


# Reading a session

def read_and_move(work: UnitOfWork, move: StateMove, params: dict):
    """The session's context (CONTEXT, with the quote `params` name, if any) and whether
    `move` moved the session from the state read; one round trip on PostgreSQL."""
    if work.postgresql:
        ctx = work.run(move.with_context, params).first()
        moved = ctx is not None and ctx.moved
    else:
        ctx = work.run(CONTEXT, params).first()
        moved = ctx is not None and bool(work.run(move.alone, {**params,
                                                               "seen": ctx.state}).rowcount)
    if ctx is None:
        raise NotFound("checkout session")
    return ctx, moved


def locked_account(work: UnitOfWork, ctx):
    """The row of LOCKED_COLUMNS the move's statement locked (statements.lock_once_moved,
    PostgreSQL), for ledger.lock; None where the lock is ledger.lock's own."""
    if not work.postgresql or ctx.locked_company_id is None:
        return None
    return _LOCKED_ROW(ctx)


def check_for_redemption(ctx, now: datetime) -> None:
    """The context of a hold or a commit: the quote must be the session's, and neither runs
    while the subscription is stopped."""
    if ctx.quote_id is None:
        raise NotFound("quote")
    if is_stopped(ctx, now):
        raise Forbidden("the subscription is stopped", code="subscription_inactive")
    check_not_expired(ctx, now)


def is_stopped(ctx, now: datetime) -> bool:
    return Subscription.is_stopped(ctx, now)  # the same rule, on the context row


def check_not_expired(ctx, now: datetime) -> None:
    if ctx.state in (OPEN, HELD) and ctx.expires_at <= now:
        raise Conflict("the checkout session has expired; open a new one")


def hold_has_expired(ctx, now: datetime) -> bool:
    """The session is HELD by a hold whose time is up: the first touch releases it."""
    return ctx.state == HELD and ctx.hold_expires_at is not None and ctx.hold_expires_at <= now


# Sessions

def create_session(session: Session, company_id: str, *, external_receipt_id: str,
                   customer_id: str, now: datetime, ttl_seconds: int,
                   pos_terminal: stores.RegisterTerminal | None = None, terminal_id: str | None = None,
                   store_id: str | None = None,
                   cashier: dict | None = None) -> CheckoutSessionResource:
    """One receipt of the register for one customer. The terminal comes from the register's
    pos key or `terminalId`; the store is the terminal's, else `storeId`, else none."""
    work = UnitOfWork.of(session)
    if pos_terminal is not None and terminal_id is not None and terminal_id != pos_terminal.id:
        raise InvalidField(["body", "terminalId"],
                           "differs from the terminal named by X-Loyalty-Pos-Key", "value_error")
    found = work.run(CREATION_CONTEXT, {
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
    if found.sale_id is not None:  # online or offline: the register reconciles with saleId
        raise Conflict("this receipt already has a committed sale",
                       code="receipt_already_committed", saleId=found.sale_id)
    cashier_id = cashier_of(session, company_id, found, cashier, now)
    row = CheckoutSessionResource(
        id=new_id(), external_receipt_id=external_receipt_id, customer_id=customer_id,
        terminal_id=terminal_id, store_id=store_id, cashier_id=cashier_id, state=OPEN,
        expires_at=now + timedelta(seconds=ttl_seconds), created_at=now)
    work.defer(INSERT_SESSION, {**row.__dict__, "company_id": company_id,
                                "latest_quote_id": None})
    return row



def cashier_of(session: Session, company_id: str, found, cashier: dict | None,
               now: datetime) -> str | None:
    """The catalog's id of the register's `cashier` block: as `found` read it with the
    operation's checks (cashier_id, cashier_name), else entered (new, or renamed)."""
    if cashier is None:
        return found.cashier_id
    if found.cashier_id is None or found.cashier_name != cashier["name"]:
        return stores.upsert_cashier(session, company_id, cashier["external_id"],
                                     cashier["name"], now).id
    return found.cashier_id
