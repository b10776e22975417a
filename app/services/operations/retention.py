"""What the service stops keeping (docs/api.md#availability): delivered outbox events with their
deliveries, expired idempotency records, and the dead letters an operator gives up on.

Each function deletes at most `limit` rows' worth by primary key and returns how many went;
the caller commits after each call (app.operations.upkeep.in_batches), so no transaction holds many
rows' locks for long. Every delete repeats its condition: a row that changed between the
choice and the delete (a replayed delivery, a key taken over by a new request) stays.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, exists, select, tuple_
from sqlalchemy.orm import Session

from app.models import IdempotencyRecord, OutboxEvent, WebhookDelivery
from app.services.webhooks.delivery import DEAD, DELIVERED

BATCH = 1000


def _deliveries_of_event():
    return ((WebhookDelivery.company_id == OutboxEvent.company_id)
            & (WebhookDelivery.event_id == OutboxEvent.id))


def _unfinished_delivery():
    return exists().where(_deliveries_of_event(), WebhookDelivery.state != DELIVERED)


def _any_delivery():
    return exists().where(_deliveries_of_event())


def prune_delivered_events(session: Session, *, before: datetime, limit: int = BATCH) -> int:
    """Delete up to `limit` events dispatched before `before` whose every delivery was made
    (or that had no endpoint to go to), with those deliveries. An event with a delivery still
    retrying or dead stays, so dead letters can be replayed."""
    chosen = [tuple(row) for row in session.execute(
        select(OutboxEvent.company_id, OutboxEvent.id)
        .where(OutboxEvent.dispatched_at < before, ~_unfinished_delivery())
        .limit(limit))]
    if not chosen:
        return 0
    session.execute(
        delete(WebhookDelivery)
        .where(tuple_(WebhookDelivery.company_id, WebhookDelivery.event_id).in_(chosen),
               WebhookDelivery.state == DELIVERED)
        .execution_options(synchronize_session=False))
    return _delete_events_left_bare(session, chosen)


def purge_dead_letters(session: Session, *, before: datetime, limit: int = BATCH) -> int:
    """Delete up to `limit` dead deliveries of events recorded before `before`; an event left
    with no delivery at all goes too. Returns the dead deliveries deleted."""
    chosen = [tuple(row) for row in session.execute(
        select(WebhookDelivery.company_id, WebhookDelivery.id, WebhookDelivery.event_id)
        .join(OutboxEvent, _deliveries_of_event())
        .where(WebhookDelivery.state == DEAD, OutboxEvent.created_at < before)
        .limit(limit))]
    if not chosen:
        return 0
    deleted = session.execute(
        delete(WebhookDelivery)
        .where(tuple_(WebhookDelivery.company_id, WebhookDelivery.id)
               .in_([(company_id, delivery_id) for company_id, delivery_id, _ in chosen]),
               WebhookDelivery.state == DEAD)
        .execution_options(synchronize_session=False)).rowcount
    _delete_events_left_bare(session, sorted({(c, event_id) for c, _, event_id in chosen}))
    return deleted


def _delete_events_left_bare(session: Session, events: list[tuple[str, str]]) -> int:
    return session.execute(
        delete(OutboxEvent)
        .where(tuple_(OutboxEvent.company_id, OutboxEvent.id).in_(events),
               OutboxEvent.dispatched_at.is_not(None), ~_any_delivery())
        .execution_options(synchronize_session=False)).rowcount


def purge_idempotency_records(session: Session, *, before: datetime, limit: int = BATCH) -> int:
    """Delete up to `limit` idempotency records created before `before`."""
    records = IdempotencyRecord
    chosen = [tuple(row) for row in session.execute(
        select(records.company_id, records.key_digest)
        .where(records.created_at < before).limit(limit))]
    if not chosen:
        return 0
    return session.execute(
        delete(records)
        .where(tuple_(records.company_id, records.key_digest).in_(chosen),
               records.created_at < before)
        .execution_options(synchronize_session=False)).rowcount
