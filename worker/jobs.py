"""Delivery jobs: turn committed events into webhook deliveries and the wallet pushes they call
for, make one delivery attempt, and the periodic sweep that re-enqueues whatever a lost job or
a dead worker left in the outbox."""
from __future__ import annotations

import time
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import lru_cache

from flask import Flask, current_app, has_app_context
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.database.engine import utcnow
from app.operations.delivery_queue import (dispatch_started, enqueue_deliveries, enqueue_delivery_in,
                                enqueue_pushes, request_dispatch)
from app.services.webhooks import delivery
from app.services.webhooks.transport import DeliveryOutcome, post_event, retry_delays
from worker.context import job_session, worker_app
from worker.pushes import after_dispatch

# The request enqueues its events the moment it has committed; only older ones are strays.
EVENT_SWEEP_AGE = timedelta(seconds=10)
# A delivery overdue this long has lost its job (due ones normally start within seconds).
DELIVERY_SWEEP_AGE = timedelta(seconds=60)
SWEEP_BATCH = 5000
DISPATCH_BATCH = 500
DISPATCH_ROUNDS = 10
_ASYNC_COMMIT = text("SET LOCAL synchronous_commit TO OFF")


def dispatch_events() -> int:
    """Make the deliveries of every event waiting, in batches; after a bounded number of them,
    hand over to the delivery jobs queued meanwhile and continue in another run."""
    app = worker_app()
    settings = app.config["SETTINGS"]
    dispatch_started(settings)
    taken = 0
    for _ in range(DISPATCH_ROUNDS):
        with job_session(app) as session:
            now = utcnow()
            count, deliveries = delivery.dispatch_pending(session, now=now, limit=DISPATCH_BATCH)
            pushes = after_dispatch(session, dispatched_at=now)  # the passes those events changed
        enqueue_deliveries(settings, deliveries)
        enqueue_pushes(settings, pushes)
        taken += count
        if count < DISPATCH_BATCH:
            return taken
    request_dispatch(settings)
    return taken


def take_up_waiting_work() -> int:
    """A worker's loop has (re)started: enqueue every delivery due now and dispatch every event
    waiting. A worker stopped between taking a job from Redis and running it loses that job,
    and a Redis outage loses the enqueues made meanwhile; a lost dispatch run also leaves its
    request standing, which holds back the next. Without this, that work waits for the sweep's
    ages (10 s for events, 60 s for deliveries) plus its interval. A job run twice costs only
    a refused claim: every attempt claims its delivery first."""
    app = worker_app()
    with job_session(app) as session:
        due = delivery.overdue_deliveries(session, due_before=utcnow(), limit=SWEEP_BATCH)
    enqueue_deliveries(app.config["SETTINGS"], due)
    return len(due) + dispatch_events()


@contextmanager
def _delivery_session(app: Flask):
    """A job session whose commit does not wait for the disk on PostgreSQL. Losing the last
    moments of delivery bookkeeping to a database crash only means an attempt is made again,
    which at-least-once delivery allows; the wait is a good part of an attempt's cost."""
    with job_session(app) as session:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(_ASYNC_COMMIT)
        yield session


def deliver(company_id: str, delivery_id: str) -> str:
    """One attempt of one delivery; schedules the next attempt when this one fails."""
    app = worker_app()
    settings = app.config["SETTINGS"]
    delays = _delays(settings.webhook_retry_schedule)  # a malformed setting fails before sending
    with _delivery_session(app) as session:
        attempt = delivery.begin_attempt(session, company_id, delivery_id, now=utcnow(),
                                         pepper=settings.api_key_pepper)
    if attempt is None:
        return "not due"
    if attempt.refusal:
        outcome = DeliveryOutcome(status=None, retry_after=None, error=attempt.refusal)
    else:
        headers = delivery.attempt_headers(attempt, int(time.time()))
        outcome = post_event(attempt.url, attempt.body, headers,
                             timeout=delivery.DELIVERY_TIMEOUT,
                             allow_private=settings.webhook_allow_private_addresses,
                             ca_bundle=settings.webhook_ca_bundle)
    with _delivery_session(app) as session:
        retry_in = delivery.finish_attempt(session, attempt, outcome, now=utcnow(),
                                           delays=delays)
    if retry_in is not None:
        enqueue_delivery_in(settings, company_id, delivery_id, retry_in)
    return "delivered" if outcome.delivered else (outcome.error or f"HTTP {outcome.status}")


@lru_cache(maxsize=4)
def _delays(schedule: str) -> tuple[float, ...]:
    return tuple(retry_delays(schedule))


def _app() -> Flask:
    return current_app._get_current_object() if has_app_context() else worker_app()


def sweep_outbox(session: Session, now: datetime) -> int:
    """Periodic task: enqueue events never dispatched and deliveries whose job was lost, so a
    crash between commit and enqueue, a Redis outage or a killed worker loses nothing."""
    settings = _app().config["SETTINGS"]
    if not settings.redis_url:
        return 0
    strays = delivery.has_stray_events(session, older_than=now - EVENT_SWEEP_AGE)
    overdue = delivery.overdue_deliveries(session, due_before=now - DELIVERY_SWEEP_AGE,
                                          limit=SWEEP_BATCH)
    if strays:
        request_dispatch(settings, force=True)  # even if a lost run's request still stands
    enqueue_deliveries(settings, overdue)
    return int(strays) + len(overdue)
