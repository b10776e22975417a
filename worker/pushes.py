"""Wallet pushes (docs/api.md#wallet): tell each registered device that its pass changed, once per
change however many workers run, retried while APNs is away, coalesced per registration."""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import lru_cache

from flask import Flask, current_app, has_app_context
from sqlalchemy.orm import Session

from app.database.engine import utcnow
from app.operations.delivery_queue import enqueue_push_in, enqueue_pushes
from app.services.cards import apns, pass_pushes
from app.services.webhooks.transport import next_delay, retry_delays
from worker.context import job_session, worker_app

# A push due this long has lost its job (due ones start within seconds).
PUSH_SWEEP_AGE = timedelta(seconds=60)
SWEEP_BATCH = 5000

log = logging.getLogger("worker.pushes")


def _app() -> Flask:
    return current_app._get_current_object() if has_app_context() else worker_app()


@lru_cache(maxsize=4)
def _delays(schedule: str) -> tuple[float, ...]:
    return tuple(retry_delays(schedule))


def _client(settings):
    wallet = settings.wallet or {}
    if not (wallet.get("cert_file") and wallet.get("key_file") and wallet.get("pass_type_id")):
        return None
    return apns.client(settings.apns_url, settings.apns_ca_bundle, wallet["cert_file"],
                       wallet["key_file"])


def push(company_id: str, customer_id: str, device_id: str) -> str:
    """The job: the registration's waiting push, if it is still waiting and no one else has it."""
    app = _app()
    settings = app.config["SETTINGS"]
    key = (company_id, customer_id, device_id)
    delays = _delays(settings.apns_retry_schedule)  # a malformed setting fails before sending
    http = _client(settings)
    if http is None:
        return "wallet not configured"
    with job_session(app) as session:
        claimed = pass_pushes.begin_push(session, key, now=utcnow())
    if claimed is None:
        return "not due"
    outcome = apns.push(http, claimed.push_token, settings.wallet["pass_type_id"])
    retry_in = None
    if outcome.retryable:
        retry_in = next_delay(claimed.number - 1, list(delays), outcome.retry_after)
    if not outcome.sent and not outcome.gone:
        log.warning("push to a device of pass %s: %s%s", customer_id, outcome.error,
                    "" if retry_in is not None else "; given up until the pass changes again")
    with job_session(app) as session:
        again = pass_pushes.finish_push(session, claimed, sent=outcome.sent, gone=outcome.gone,
                                    retry_in=retry_in, now=utcnow())
    if again:
        enqueue_pushes(settings, [key])
    elif retry_in is not None and settings.redis_url:
        enqueue_push_in(settings, key, retry_in)
    return "pushed" if outcome.sent else ("removed" if outcome.gone else outcome.error or "failed")


def after_dispatch(session: Session, *, dispatched_at: datetime) -> list[pass_pushes.Key]:
    """Called by the dispatch run in its transaction: the passes its events changed."""
    return pass_pushes.mark_from_events(session, dispatched_at=dispatched_at, now=dispatched_at)


def sweep_pushes(session: Session, now: datetime) -> int:
    """Periodic task: passes changed without an event (accruals maturing), and pushes whose job
    was lost (a killed worker, Redis away); enqueued after this task's commit."""
    settings = _app().config["SETTINGS"]
    keys = pass_pushes.mark_stale(session, now=now, limit=SWEEP_BATCH)
    keys += pass_pushes.due_pushes(session, due_before=now - PUSH_SWEEP_AGE, limit=SWEEP_BATCH)
    session.commit()
    enqueue_pushes(settings, sorted(set(keys)))
    return len(keys)


def push_waiting(limit: int = SWEEP_BATCH) -> int:
    """Make every push due now in this process, one after another (the benchmark and the tests
    drive pushes without a queue; a worker takes them as queued jobs); returns how many were
    claimed and tried."""
    app = _app()
    with job_session(app) as session:
        now = utcnow()
        pass_pushes.mark_stale(session, now=now, limit=limit)
        due = pass_pushes.due_pushes(session, due_before=now, limit=limit)
    return sum(push(*key) != "not due" for key in due)
