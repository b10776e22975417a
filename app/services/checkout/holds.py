"""Holds of bonuses on a checkout session (docs/api.md#states, #money): place, release, and the
upkeep that expires holds and sessions. Same concurrency rules as app/services/checkout/sessions.py:
the session's state moves by a conditional UPDATE (its row lock) before the account is locked.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from app.models.base import new_id
from app.models.checkout import ACTIVE, EXPIRED, HELD, OPEN
from app.services.checkout.resources import HoldResource
from app.services.checkout.sessions import (ATTEMPTS, check_for_redemption, hold_has_expired,
                                            locked_account, read_and_move)
from app.services.checkout.statements import (END_HOLD, EXPIRE_HOLD, HOLDS, SESSIONS,
                                              lock_once_moved, session_key, state_move)
from app.services.errors import Conflict, InvalidField
from app.services.rewards import ledger
from app.services.rewards.locked_account import Account
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event

SESSION_EXPIRED_REASON = "checkout session expired"

_KEY = session_key()
_HELD = state_move(SESSIONS.c.latest_quote_id == bindparam("quote"), also=lock_once_moved,
                   state=HELD)
_OPENED = state_move(SESSIONS.c.state == HELD, from_seen=False, state=OPEN)
_EXPIRED = update(SESSIONS).where(*_KEY).values(state=EXPIRED)
_INSERT_HOLD = insert(HOLDS)

# Upkeep: candidates are read without locks; each is then locked alone, skipping any a
# request holds right now (the next run takes it), so the job never waits on the register.
HOLDS_DUE = (select(HOLDS.c.company_id, HOLDS.c.checkout_session_id)
              .where(HOLDS.c.state == ACTIVE, HOLDS.c.expires_at <= bindparam("now"))
              .order_by(HOLDS.c.expires_at).limit(bindparam("limit")))
SESSIONS_DUE = (select(SESSIONS.c.company_id, SESSIONS.c.id)
                 .where(SESSIONS.c.state.in_((OPEN, HELD)),
                        SESSIONS.c.expires_at <= bindparam("now"))
                 .order_by(SESSIONS.c.expires_at).limit(bindparam("limit")))
_LOCK_SESSION = (select(SESSIONS.c.state, SESSIONS.c.customer_id, SESSIONS.c.expires_at)
                 .where(*_KEY).with_for_update(skip_locked=True))


def _key(company_id: str, session_id: str, **more) -> dict:
    return {"company": company_id, "session_id": session_id, **more}


def hold_resource(row) -> HoldResource:
    return HoldResource(row.id, row.checkout_session_id, row.customer_id, row.amount, row.state,
                        row.expires_at, row.created_at, row.released_at)


def expire_touched_hold(work: UnitOfWork, company_id: str, session_id: str,
                        account: Account, now: datetime) -> HoldResource:
    """Release the session's expired hold found on first touch. The caller has moved the
    session's state (so holds its row lock) and locked the account."""
    row = work.run(EXPIRE_HOLD, {"company": company_id, "session_id": session_id,
                                 "now": now}).first()
    if row is None:  # the hold read as expired was replaced meanwhile
        raise Conflict("the session already has an active hold", code="hold_already_active")
    ledger.unreserve(account, row.amount, now)
    hold = hold_resource(row)
    record_event(work.session, company_id, "checkout.hold.expired", hold.as_json())
    return hold



def place_hold(session: Session, company_id: str, session_id: str, *, quote_id: str,
               amount: int | None, now: datetime) -> HoldResource:
    """Move bonuses from available to reserved for the session's latest quote, under the
    account's row lock; the hold lasts the program's holdTtlSeconds."""
    work = UnitOfWork.of(session)
    for _ in range(ATTEMPTS):
        ctx, moved = read_and_move(work, _HELD, _key(company_id, session_id, quote=quote_id))
        check_for_redemption(ctx, now)
        touched = hold_has_expired(ctx, now)
        if ctx.state == HELD and not touched:
            raise Conflict("the session already has an active hold", code="hold_already_active")
        if ctx.state not in (OPEN, HELD):
            raise Conflict(f"a hold needs an OPEN session; this one is {ctx.state}")
        if ctx.latest_quote_id != quote_id:
            raise Conflict("hold the session's latest quote")
        if not ctx.quote_discount:
            raise Conflict("the quote redeems nothing")
        held = ctx.quote_discount if amount is None else amount
        if not 0 < held <= ctx.quote_discount:
            raise InvalidField(["body", "amount"], "must be more than 0 and at most the quote's "
                               "discount", "value_error")
        if moved:
            break
    else:
        raise Conflict("the checkout session is changing; try again")

    account = ledger.lock(work, company_id, ctx.customer_id, now, locked_account(work, ctx))
    if touched:
        expire_touched_hold(work, company_id, session_id, account, now)
    ledger.reserve(account, held, now)
    hold = HoldResource(id=new_id(), checkout_session_id=session_id, customer_id=ctx.customer_id,
                        amount=held, state=ACTIVE,
                        expires_at=now + timedelta(seconds=ctx.hold_ttl_seconds),
                        created_at=now, released_at=None)
    work.defer(_INSERT_HOLD, {**hold.__dict__, "company_id": company_id,
                              "quote_id": quote_id, "release_reason": None})
    record_event(session, company_id, "checkout.hold.created", hold.as_json())
    return hold


def _end_hold(work: UnitOfWork, company_id: str, session_id: str, customer_id: str,
              reason: str | None, now: datetime) -> HoldResource | None:
    """End the session's active hold (EXPIRED when its time is up, else RELEASED) and give
    its bonuses back. The caller holds the session's row lock."""
    row = work.run(END_HOLD, _key(company_id, session_id, now=now, reason=reason)).first()
    if row is None:
        return None
    account = ledger.lock(work, company_id, customer_id, now)
    ledger.unreserve(account, row.amount, now)
    hold = hold_resource(row)
    event = "checkout.hold.expired" if hold.state == EXPIRED else "checkout.hold.released"
    record_event(work.session, company_id, event, hold.as_json())
    return hold


def release_hold(session: Session, company_id: str, session_id: str, *, reason: str | None,
                 now: datetime) -> HoldResource:
    """Payment was cancelled: give the held bonuses back. Allowed while the subscription is
    stopped and after the session's own expiry, so a checkout can always be unwound. A hold
    whose time ran out answers as EXPIRED."""
    work = UnitOfWork.of(session)
    for _ in range(ATTEMPTS):
        ctx, moved = read_and_move(work, _OPENED, _key(company_id, session_id, quote=None))
        if ctx.state != HELD:
            raise Conflict(f"a release needs a HELD session; this one is {ctx.state}")
        if moved:
            break
    else:
        raise Conflict("the checkout session is changing; try again")
    hold = _end_hold(work, company_id, session_id, ctx.customer_id, reason, now)
    if hold is None:  # state and holds disagree: never committed
        raise Conflict("the session has no active hold")
    return hold


def expire_holds(session: Session, now: datetime, limit: int = 200) -> int:
    """Periodic: release holds whose time is up (emits checkout.hold.expired)."""
    work = UnitOfWork.of(session)
    expired = 0
    for company_id, session_id in work.run(HOLDS_DUE, {"now": now, "limit": limit}).all():
        locked = work.run(_LOCK_SESSION, _key(company_id, session_id)).first()
        if locked is None or locked.state != HELD:
            continue
        row = work.run(EXPIRE_HOLD, _key(company_id, session_id, now=now)).first()
        if row is None:
            continue  # captured or released meanwhile
        work.run(_OPENED.alone, _key(company_id, session_id))
        account = ledger.lock(work, company_id, locked.customer_id, now)
        ledger.unreserve(account, row.amount, now)
        record_event(session, company_id, "checkout.hold.expired", hold_resource(row).as_json())
        expired += 1
    return expired


def expire_sessions(session: Session, now: datetime, limit: int = 200) -> int:
    """Periodic: sessions left uncommitted past SESSION_TTL become EXPIRED, releasing their hold."""
    work = UnitOfWork.of(session)
    count = 0
    due = work.run(SESSIONS_DUE, {"now": now, "limit": limit}).all()
    for company_id, session_id in due:
        locked = work.run(_LOCK_SESSION, _key(company_id, session_id)).first()
        if locked is None or locked.state not in (OPEN, HELD) or locked.expires_at > now:
            continue
        if locked.state == HELD:
            _end_hold(work, company_id, session_id, locked.customer_id,
                      SESSION_EXPIRED_REASON, now)
        work.run(_EXPIRED, _key(company_id, session_id))
        count += 1
    return count
