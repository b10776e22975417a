"""What became of deliveries, for those who look after them: a company's latest deliveries, the
dead letters (deliveries given up on) and their replay. Making and attempting deliveries:
app.services.webhooks.delivery."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, tuple_, update
from sqlalchemy.orm import Session

from app.models import OutboxEvent, WebhookDelivery, WebhookEndpoint
from app.services.audit import events as audit
from app.services.errors import NotFound
from app.services.webhooks.delivery import DEAD, PENDING, Ids
from app.services.webhooks.endpoints import ACTIVE

LATEST = 50


def _its_endpoint():
    return ((WebhookEndpoint.company_id == WebhookDelivery.company_id)
            & (WebhookEndpoint.id == WebhookDelivery.endpoint_id))


def _of_event_and_endpoint(query):
    return (query
            .join(OutboxEvent, (OutboxEvent.company_id == WebhookDelivery.company_id)
                  & (OutboxEvent.id == WebhookDelivery.event_id))
            .join(WebhookEndpoint, _its_endpoint()))


# --- the latest deliveries -------------------------------------------------------------------

@dataclass(frozen=True)
class DeliveryLine:
    delivery_id: str
    event_id: str
    event_type: str
    url: str
    state: str
    attempts: int
    last_status: int | None
    last_error: str | None
    created_at: datetime
    next_attempt_at: datetime | None
    delivered_at: datetime | None


def latest_deliveries(session: Session, company_id: str, *,
                      limit: int = LATEST) -> list[DeliveryLine]:
    """The company's `limit` latest deliveries, newest first, whatever their state: read in the
    order of ix_webhook_deliveries_company_recent (company, creation, id), no more rows than
    shown."""
    query = _of_event_and_endpoint(
        select(WebhookDelivery.id, WebhookDelivery.event_id, OutboxEvent.type, WebhookEndpoint.url,
               WebhookDelivery.state, WebhookDelivery.attempts, WebhookDelivery.last_status,
               WebhookDelivery.last_error, WebhookDelivery.created_at,
               WebhookDelivery.next_attempt_at, WebhookDelivery.delivered_at))
    query = (query.where(WebhookDelivery.company_id == company_id)
             .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc()).limit(limit))
    return [DeliveryLine(*row) for row in session.execute(query)]


# --- dead letters -------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeadLetter:
    event_id: str
    event_type: str
    company_id: str
    delivery_id: str
    endpoint_id: str
    url: str
    attempts: int
    last_status: int | None
    last_error: str | None
    created_at: datetime


def dead_letters(session: Session, *, company_id: str | None = None,
                 limit: int = 100) -> list[DeadLetter]:
    query = _of_event_and_endpoint(
        select(WebhookDelivery.event_id, OutboxEvent.type, WebhookDelivery.company_id,
               WebhookDelivery.id, WebhookDelivery.endpoint_id, WebhookEndpoint.url,
               WebhookDelivery.attempts, WebhookDelivery.last_status, WebhookDelivery.last_error,
               OutboxEvent.created_at))
    query = (query.where(WebhookDelivery.state == DEAD)
             .order_by(OutboxEvent.created_at.desc(), WebhookDelivery.id).limit(limit))
    if company_id is not None:
        query = query.where(WebhookDelivery.company_id == company_id)
    return [DeadLetter(*row) for row in session.execute(query)]


def replay_event(session: Session, event_id: str, *, now: datetime,
                 company_id: str | None = None,
                 actor: audit.Actor | None = None) -> tuple[Ids, int]:
    """Send the event's dead deliveries again, each with a fresh retry schedule. Returns the
    (company_id, delivery_id) made PENDING, and how many were left because their endpoint is
    no longer ACTIVE. With `company_id`, only that company's: another's event is not found, as
    an unknown one. The operator's replay names no company. Recorded in the audit, one line
    per company whose deliveries it sends again."""
    dead = (select(WebhookDelivery.company_id, WebhookDelivery.id, WebhookEndpoint.state)
            .join(WebhookEndpoint, _its_endpoint())
            .where(WebhookDelivery.event_id == event_id, WebhookDelivery.state == DEAD))
    if company_id is not None:
        dead = dead.where(WebhookDelivery.company_id == company_id)
    found = session.execute(dead).all()
    if not found:
        raise NotFound("dead delivery of that event")
    revived = [(company, delivery_id) for company, delivery_id, state in found if state == ACTIVE]
    if revived:
        session.execute(
            update(WebhookDelivery)
            .where(tuple_(WebhookDelivery.company_id, WebhookDelivery.id).in_(revived),
                   WebhookDelivery.state == DEAD)
            .values(state=PENDING, attempts=0, next_attempt_at=now, last_error=None,
                    last_status=None)
            .execution_options(synchronize_session=False))
    for company in sorted({company for company, _ in revived}):
        audit.record(session, company, actor, "webhook_event.replayed", "webhook_event",
                     event_id, at=now)
    return revived, len(found) - len(revived)
