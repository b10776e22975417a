"""The pushes that tell a device its Wallet pass changed (docs/api.md#wallet): made due by the
worker from the events a change records (after commit, as webhooks are) and, for changes that record
none (accruals maturing), by a periodic sweep; claimed by a lease, so each is made once."""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select, tuple_, update
from sqlalchemy.orm import Session

from app.models import OutboxEvent, Program, RewardAccount, SweepMark, WalletRegistration
from app.database.engine import insert_of
from app.services.cards.passkit import PASS_CHANGED_AT

# Events whose change shows on a pass; each names its customer in data.customerId.
PASS_EVENTS = ("sale.committed", "sale.returned", "reward.adjusted", "reward.expired",
               "customer.tier_changed", "checkout.hold.created", "checkout.hold.released",
               "checkout.hold.expired")
# A push is claimed by moving `push_due_at` past the longest a push can take (a lease).
PUSH_LEASE = timedelta(seconds=60)
EARLY_TOLERANCE = timedelta(seconds=2)
# The sweep reads again the changes dated this long before its mark, for those committed after
# it: a change is dated when its transaction takes its moment, not when it commits. The longest
# such wait is an upkeep job's (each task takes its moment at its start and may run until
# worker.__main__.UPKEEP_JOB_TIMEOUT, 600 s, ends it); a minute more for the hosts' clocks.
SWEEP_MARGIN = timedelta(minutes=11)
_SWEEP = "wallet push sweep"
Key = tuple[str, str, str]  # (company_id, customer_id, device_library_id) of a registration


def _mark(session: Session, now: datetime, *where) -> list[Key]:
    """Make a push due for the registrations whose pass changed after their last push; one
    already waiting stays the one (coalesced), now covering this change too."""
    return [tuple(row) for row in session.execute(
        update(WalletRegistration)
        .where(WalletRegistration.seen_updated_at < PASS_CHANGED_AT, *where)
        .values(push_due_at=func.coalesce(WalletRegistration.push_due_at, now),
                seen_updated_at=PASS_CHANGED_AT)
        .returning(WalletRegistration.company_id, WalletRegistration.customer_id,
                   WalletRegistration.device_library_id)
        .execution_options(synchronize_session=False))]


def mark_from_events(session: Session, *, dispatched_at: datetime, now: datetime) -> list[Key]:
    """The registrations of the customers named by the events a dispatch run just took."""
    rows = session.execute(select(OutboxEvent.company_id, OutboxEvent.payload).where(
        OutboxEvent.dispatched_at == dispatched_at, OutboxEvent.type.in_(PASS_EVENTS))).all()
    customers = {(company_id, json.loads(payload)["data"].get("customerId"))
                 for company_id, payload in rows}
    customers = sorted(pair for pair in customers if pair[1])
    if not customers or not _any_registration(session):
        return []
    return _mark(session, now, tuple_(WalletRegistration.company_id,
                                      WalletRegistration.customer_id).in_(customers))


def mark_stale(session: Session, *, now: datetime, limit: int) -> list[Key]:
    """The sweep: registrations behind their pass whatever changed it (maturing accruals record
    no event). It reads only the accounts changed since its mark less `SWEEP_MARGIN` (a range of
    `ix_reward_accounts_updated`), oldest first, and moves the mark to this run's moment, or to
    the last change it took when `limit` cut the run short; and the passes of the companies
    whose tiers list changed since then (every pass shows a tier). Runs take turns on the
    mark's row."""
    reached = _sweep_mark(session, now)
    since = None if reached is None else min(reached, now) - SWEEP_MARGIN
    by_tiers = _tiers_changed(session, now, since)
    behind = (select(WalletRegistration.company_id, WalletRegistration.customer_id,
                     WalletRegistration.device_library_id, RewardAccount.updated_at)
              .join(RewardAccount, (RewardAccount.company_id == WalletRegistration.company_id)
                    & (RewardAccount.customer_id == WalletRegistration.customer_id))
              .where(WalletRegistration.seen_updated_at < RewardAccount.updated_at))
    if since is not None:  # a mark ahead of now (the clock set back) counts as now
        behind = behind.where(RewardAccount.updated_at >= since)
    rows = session.execute(behind.order_by(RewardAccount.updated_at).limit(limit)).all()
    cut_short = len(rows) == limit
    session.execute(update(SweepMark).where(SweepMark.name == _SWEEP)
                    .values(reached_at=min(rows[-1].updated_at, now) if cut_short else now))
    if not rows:
        return by_tiers
    return by_tiers + _mark(session, now, tuple_(
        WalletRegistration.company_id, WalletRegistration.customer_id,
        WalletRegistration.device_library_id).in_([tuple(row[:3]) for row in rows]))


def _tiers_changed(session: Session, now: datetime, since: datetime | None) -> list[Key]:
    """The registrations of the companies whose tiers list changed since `since` (ever, when
    None) and whose passes are behind it. A change of the list writes no account."""
    changed = select(Program.company_id).where(Program.tiers_changed_at.is_not(None))
    if since is not None:
        changed = changed.where(Program.tiers_changed_at >= since)
    companies = session.scalars(changed).all()
    if not companies or not _any_registration(session):
        return []
    return _mark(session, now, WalletRegistration.company_id.in_(companies))


def _sweep_mark(session: Session, now: datetime) -> datetime | None:
    """The sweep's mark, locked until this run commits (None before its first run)."""
    created = session.execute(insert_of(session, SweepMark).values(name=_SWEEP, reached_at=now)
                              .on_conflict_do_nothing()).rowcount == 1
    reached = session.scalar(select(SweepMark.reached_at).where(SweepMark.name == _SWEEP)
                             .with_for_update())
    return None if created else reached


def _any_registration(session: Session) -> bool:
    return session.scalar(select(WalletRegistration.company_id).limit(1)) is not None


def due_pushes(session: Session, *, due_before: datetime, limit: int) -> list[Key]:
    return [tuple(row) for row in session.execute(
        select(WalletRegistration.company_id, WalletRegistration.customer_id,
               WalletRegistration.device_library_id)
        .where(WalletRegistration.push_due_at <= due_before)
        .order_by(WalletRegistration.push_due_at).limit(limit))]


@dataclass(frozen=True)
class Push:
    key: Key
    push_token: str
    number: int  # 1 for the first attempt
    covers: datetime  # the pass change this push tells of


def _registration(key: Key):
    company_id, customer_id, device_id = key
    return (WalletRegistration.company_id == company_id,
            WalletRegistration.customer_id == customer_id,
            WalletRegistration.device_library_id == device_id)


def begin_push(session: Session, key: Key, *, now: datetime) -> Push | None:
    """Claim the registration's waiting push, or None when none is due (sent, or another
    worker has it): each push is made once, however many jobs ask for it."""
    row = session.execute(
        update(WalletRegistration)
        .where(*_registration(key), WalletRegistration.push_due_at <= now + EARLY_TOLERANCE)
        .values(push_due_at=now + PUSH_LEASE, push_attempts=WalletRegistration.push_attempts + 1)
        .returning(WalletRegistration.push_token, WalletRegistration.push_attempts,
                   WalletRegistration.seen_updated_at)
        .execution_options(synchronize_session=False)).one_or_none()
    return None if row is None else Push(key, row.push_token, row.push_attempts,
                                         row.seen_updated_at)


def finish_push(session: Session, push: Push, *, sent: bool, gone: bool, retry_in: float | None,
                now: datetime) -> bool:
    """Record a push's end. Sent: done, unless the pass changed again meanwhile (then the next
    push is due at once; returns True). Gone (a 410, or a 400 refusing the device token): the
    registration is removed. Else the push waits `retry_in` seconds, or is given up (None)
    until the pass changes again."""
    ours = (*_registration(push.key), WalletRegistration.push_attempts == push.number)
    if gone:
        session.execute(delete(WalletRegistration).where(
            *ours, WalletRegistration.push_token == push.push_token))
        return False
    if not sent and retry_in is not None:
        session.execute(update(WalletRegistration).where(*ours)
                        .values(push_due_at=now + timedelta(seconds=retry_in))
                        .execution_options(synchronize_session=False))
        return False
    again = session.execute(
        update(WalletRegistration)
        .where(*ours, WalletRegistration.seen_updated_at != bindparam("covers"))
        .values(push_due_at=now, push_attempts=0)
        .execution_options(synchronize_session=False), {"covers": push.covers}).rowcount == 1
    if not again:
        session.execute(update(WalletRegistration).where(*ours)
                        .values(push_due_at=None, push_attempts=0)
                        .execution_options(synchronize_session=False))
    return again
