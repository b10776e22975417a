"""Deliveries: turning outbox events into one delivery per (event, endpoint), one attempt at a
time, the retry timetable, down to the dead letters. What became of them (the latest, the dead
letters and their replay): app.services.webhooks.history.

Delivery is at least once. An attempt is claimed by moving `next_attempt_at` past the
attempt's longest possible run (a lease): a duplicate job, or the sweep, finds it not due
and leaves it alone, and a worker killed mid-attempt leaves a lease that simply runs out.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography.fernet import InvalidToken
from sqlalchemy import func, select, tuple_, update
from sqlalchemy.orm import Session

from app.models import OutboxEvent, WebhookDelivery, WebhookEndpoint
from app.services.webhooks.endpoints import (ACTIVE, DISABLED, is_allowed, signing_secrets,
                                             url_host, wants)
from app.services.webhooks.outbox import SEALED_FIELDS, forgotten, revealed
from app.services.webhooks.signing import signature_headers
from app.services.webhooks.transport import DeliveryOutcome, next_delay

PENDING, RETRYING, DELIVERED, DEAD = "PENDING", "RETRYING", "DELIVERED", "DEAD"
STATES = (PENDING, RETRYING, DELIVERED, DEAD)
DELIVERY_TIMEOUT = 15.0
# Longer than an attempt can take (its job is stopped at app.operations.delivery_queue.DELIVER_JOB_TIMEOUT),
# so a lease runs out only when its worker is gone.
ATTEMPT_LEASE = timedelta(seconds=60)
# A retry the scheduler hands over a little early (clocks of two machines) still counts as due.
EARLY_TOLERANCE = timedelta(seconds=2)
# A receiver's Retry-After is honoured up to a day; beyond that it would park the delivery.
RETRY_AFTER_CAP = 24 * 3600.0
Ids = list[tuple[str, str]]  # (company_id, id) of events or deliveries


# --- from outbox events to deliveries -----------------------------------------------------------

def dispatch_pending(session: Session, *, now: datetime, limit: int) -> tuple[int, Ids]:
    """Take up to `limit` of the oldest events not dispatched yet and make one PENDING delivery
    per (event, ACTIVE endpoint that wants it). Returns how many events were taken and the new
    deliveries' (company_id, id). Events another transaction is taking are skipped."""
    claimable = (select(OutboxEvent.company_id, OutboxEvent.id)
                 .where(OutboxEvent.dispatched_at.is_(None))
                 .order_by(OutboxEvent.created_at).limit(limit)
                 .with_for_update(skip_locked=True))
    claimed = session.execute(
        update(OutboxEvent)
        .where(tuple_(OutboxEvent.company_id, OutboxEvent.id).in_(claimable))
        .values(dispatched_at=now)
        .returning(OutboxEvent.company_id, OutboxEvent.id, OutboxEvent.type)
        .execution_options(synchronize_session=False)).all()
    if not claimed:
        return 0, []
    endpoints = session.execute(
        select(WebhookEndpoint.company_id, WebhookEndpoint.id, WebhookEndpoint.events)
        .where(WebhookEndpoint.company_id.in_({company_id for company_id, _, _ in claimed}),
               WebhookEndpoint.state == ACTIVE)).all()
    rows = [WebhookDelivery(company_id=company_id, event_id=event_id, endpoint_id=endpoint.id,
                            state=PENDING, attempts=0, next_attempt_at=now, created_at=now)
            for company_id, event_id, event_type in claimed
            for endpoint in endpoints
            if endpoint.company_id == company_id and wants(endpoint.events, event_type)]
    session.add_all(rows)
    session.flush()
    sent = {(row.company_id, row.event_id) for row in rows}
    for company_id, event_id, event_type in claimed:
        if event_type in SEALED_FIELDS and (company_id, event_id) not in sent:
            _forget_sealed_fields(session, company_id, event_id, event_type)
    return len(claimed), [(row.company_id, row.id) for row in rows]


def has_stray_events(session: Session, *, older_than: datetime) -> bool:
    """Whether an event recorded before `older_than` still waits for its dispatch."""
    return session.scalar(
        select(OutboxEvent.id)
        .where(OutboxEvent.dispatched_at.is_(None), OutboxEvent.created_at <= older_than)
        .limit(1)) is not None


def overdue_deliveries(session: Session, *, due_before: datetime, limit: int) -> Ids:
    """Deliveries whose attempt should have started by `due_before` (lost jobs, dead workers)."""
    return [tuple(row) for row in session.execute(
        select(WebhookDelivery.company_id, WebhookDelivery.id)
        .where(WebhookDelivery.state.in_((PENDING, RETRYING)),
               WebhookDelivery.next_attempt_at <= due_before)
        .order_by(WebhookDelivery.next_attempt_at).limit(limit))]


# --- one attempt ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Attempt:
    company_id: str
    delivery_id: str
    endpoint_id: str
    event_id: str
    number: int  # 1 for the first attempt
    url: str
    body: bytes  # the stored payload, byte for byte: what is signed is what is sent
    secret: str | None  # None when it cannot be decrypted (the pepper changed)
    refusal: str | None  # why nothing may be sent on this attempt
    event_type: str = ""
    previous_secret: str | None = None  # the one a rotation replaced, while its grace lasts


def begin_attempt(session: Session, company_id: str, delivery_id: str, *, now: datetime,
                  pepper: str) -> Attempt | None:
    """Claim the delivery's next attempt, or None when it is not due (another job has it, or it
    is finished). A delivery whose endpoint is gone is dead-lettered here without a request."""
    claim = session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.company_id == company_id, WebhookDelivery.id == delivery_id,
               WebhookDelivery.state.in_((PENDING, RETRYING)),
               WebhookDelivery.next_attempt_at <= now + EARLY_TOLERANCE)
        .values(attempts=WebhookDelivery.attempts + 1, next_attempt_at=now + ATTEMPT_LEASE)
        .returning(WebhookDelivery.event_id, WebhookDelivery.endpoint_id, WebhookDelivery.attempts)
        .execution_options(synchronize_session=False)).one_or_none()
    if claim is None:
        return None
    event_id, endpoint_id, number = claim
    row = session.execute(
        select(OutboxEvent.type, OutboxEvent.payload, WebhookEndpoint.url, WebhookEndpoint.state,
               WebhookEndpoint.secret_encrypted, WebhookEndpoint.previous_secret_encrypted,
               WebhookEndpoint.previous_secret_valid_until)
        .join(WebhookEndpoint, (WebhookEndpoint.company_id == OutboxEvent.company_id)
              & (WebhookEndpoint.id == endpoint_id))
        .where(OutboxEvent.company_id == company_id, OutboxEvent.id == event_id)).one()
    if row.state != ACTIVE:
        _update(session, company_id, delivery_id, number, state=DEAD, next_attempt_at=None,
                attempts=number - 1, last_error=f"endpoint {row.state.lower()}, nothing sent")
        _forget_sealed_fields(session, company_id, event_id, row.type)
        return None
    try:
        secret, previous_secret = signing_secrets(
            pepper, row.secret_encrypted, row.previous_secret_encrypted,
            row.previous_secret_valid_until, now=now)
    except InvalidToken:
        secret = previous_secret = None
    refusal = None if secret else "the endpoint secret cannot be decrypted"
    try:
        body = revealed(row.type, row.payload, pepper)
    except InvalidToken:
        body, refusal = row.payload, refusal or "the event's sealed fields cannot be decrypted"
    try:
        if refusal is None and not is_allowed(session, url_host(row.url)):
            refusal = "host no longer allowed"
    except ValueError as exc:
        refusal = str(exc)
    return Attempt(company_id, delivery_id, endpoint_id, event_id, number, row.url,
                   body.encode("utf-8"), secret, refusal, row.type, previous_secret)


def attempt_headers(attempt: Attempt, timestamp: int) -> dict[str, str]:
    """The Standard Webhooks headers; `webhook-id` is the event id on every attempt and endpoint."""
    return signature_headers(attempt.secret, attempt.event_id, timestamp, attempt.body,
                             previous=attempt.previous_secret)


def finish_attempt(session: Session, attempt: Attempt, outcome: DeliveryOutcome, *, now: datetime,
                   delays: Sequence[float], rand=None) -> float | None:
    """Record what the attempt came to; returns seconds until the next attempt, or None when
    there is none (delivered, dead, or the attempt is no longer ours)."""
    error = outcome.error or (None if outcome.delivered else f"HTTP {outcome.status}")
    common = {"last_status": outcome.status, "last_error": error}
    if outcome.delivered:
        _update(session, attempt.company_id, attempt.delivery_id, attempt.number, state=DELIVERED,
                delivered_at=now, next_attempt_at=None, **common)
        _forget_sealed_fields(session, attempt.company_id, attempt.event_id, attempt.event_type)
        return None
    if outcome.gone:
        session.execute(
            update(WebhookEndpoint)
            .where(WebhookEndpoint.company_id == attempt.company_id,
                   WebhookEndpoint.id == attempt.endpoint_id, WebhookEndpoint.state == ACTIVE)
            .values(state=DISABLED, disabled_at=now).execution_options(synchronize_session=False))
        _update(session, attempt.company_id, attempt.delivery_id, attempt.number, state=DEAD,
                next_attempt_at=None, last_status=410, last_error="HTTP 410: endpoint disabled")
        _forget_sealed_fields(session, attempt.company_id, attempt.event_id, attempt.event_type)
        return None
    retry_after = None if outcome.retry_after is None else min(outcome.retry_after, RETRY_AFTER_CAP)
    delay = next_delay(attempt.number - 1, delays, retry_after, rand)
    if delay is None:
        _update(session, attempt.company_id, attempt.delivery_id, attempt.number, state=DEAD,
                next_attempt_at=None, **common)
        _forget_sealed_fields(session, attempt.company_id, attempt.event_id, attempt.event_type)
        return None
    ours = _update(session, attempt.company_id, attempt.delivery_id, attempt.number, state=RETRYING,
                   next_attempt_at=now + timedelta(seconds=delay), **common)
    return delay if ours else None


def _update(session: Session, company_id: str, delivery_id: str, number: int, **values) -> bool:
    """Change the delivery only while attempt `number` is still the latest (its lease held)."""
    result = session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.company_id == company_id, WebhookDelivery.id == delivery_id,
               WebhookDelivery.attempts == number)
        .values(**values).execution_options(synchronize_session=False))
    return result.rowcount == 1


def _forget_sealed_fields(session: Session, company_id: str, event_id: str, event_type: str) -> None:
    """Once none of the event's deliveries is left to make (each delivered or dead), its sealed
    fields (an OTP code) are set to null in the stored payload: kept no longer than needed.
    A replay afterwards sends the event without them."""
    if event_type not in SEALED_FIELDS:
        return
    # Locked: two deliveries of the event ending at once must not each see the other unfinished.
    payload = session.scalar(select(OutboxEvent.payload).where(
        OutboxEvent.company_id == company_id, OutboxEvent.id == event_id).with_for_update())
    unfinished = select(WebhookDelivery.id).where(
        WebhookDelivery.company_id == company_id, WebhookDelivery.event_id == event_id,
        WebhookDelivery.state.in_((PENDING, RETRYING)))
    session.execute(
        update(OutboxEvent)
        .where(OutboxEvent.company_id == company_id, OutboxEvent.id == event_id,
               ~unfinished.exists())
        .values(payload=forgotten(event_type, payload)).execution_options(synchronize_session=False))


def delivery_counts(session: Session) -> dict[str, int]:
    """Deliveries by state, for the operator and the benchmark."""
    by_state = select(WebhookDelivery.state, func.count()).group_by(WebhookDelivery.state)
    return dict(session.execute(by_state).all())
