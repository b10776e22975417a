"""Upkeep outside a request, committed as it goes: the retention tasks of the periodic job
and the operator's purges. Each batch is its own transaction, so a register waiting for a
row never waits on more than one batch."""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy.orm import Session

from app.services.operations import retention
from app.services.tenancy import previous_keys

# A run of the periodic job deletes at most this many batches of each kind; a backlog is
# worked off over the following runs rather than in one long job.
MOST_BATCHES = 20


def in_batches(session: Session, step: Callable[[int], int], *, limit: int = retention.BATCH,
               most: int = MOST_BATCHES) -> int:
    """Call `step(limit)` and commit, until a step handles fewer than `limit` or `most`
    steps have run; returns the total handled."""
    total = 0
    for _ in range(most):
        handled = step(limit)
        session.commit()
        total += handled
        if handled < limit:
            break
    return total


def prune_outbox(session: Session, now: datetime) -> int:
    """Periodic task: delivered events older than OUTBOX_RETENTION_DAYS, with their deliveries."""
    before = now - timedelta(days=current_app.config["SETTINGS"].outbox_retention_days)
    return in_batches(session, lambda limit: retention.prune_delivered_events(
        session, before=before, limit=limit))


def purge_idempotency(session: Session, now: datetime, most: int = MOST_BATCHES) -> int:
    """Periodic task (and `flask idempotency purge`): records past IDEMPOTENCY_TTL."""
    before = now - timedelta(seconds=current_app.config["SETTINGS"].idempotency_ttl)
    return in_batches(session, lambda limit: retention.purge_idempotency_records(
        session, before=before, limit=limit), most=most)


def purge_ended_keys(session: Session, now: datetime) -> int:
    """Periodic task: replaced API keys whose grace has ended (a rotation forgets its own too)."""
    return in_batches(session, lambda limit: previous_keys.purge_ended(session, now=now,
                                                                        limit=limit))
