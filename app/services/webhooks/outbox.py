"""Recording an event: one insert into the outbox, in the transaction of the change.

Delivery happens elsewhere (the worker), so a rolled-back change sends nothing and a
committed one is never lost.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert
from sqlalchemy.orm import Session

from app.database.engine import utcnow
from app.models import OutboxEvent
from app.models.base import new_id
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.sealing import seal, unseal
from app.wire import compact_json, format_timestamp

EVENT_TYPES = (
    "customer.created", "reward.adjusted",
    "checkout.hold.created", "checkout.hold.released", "checkout.hold.expired",
    "sale.committed", "sale.returned", "catalog.synced", "otp.code_issued",
    "program.updated", "customer.tier_changed",
    "reward.expiring", "reward.expired",
)


# Fields of an event's data that are credentials (docs/api.md#otp): stored encrypted, sent in
# clear, and set to null once none of the event's deliveries is left to make.
SEALED_FIELDS = {"otp.code_issued": ("code",)}
_SEAL_PURPOSE = "outbox-sealed-field"


def _with_sealed_fields(event_type: str, payload: str, change) -> str:
    """The payload with each sealed field's value replaced by `change(value)`."""
    document = json.loads(payload)
    for name in SEALED_FIELDS[event_type]:
        if document["data"].get(name) is not None:
            document["data"][name] = change(document["data"][name])
    return compact_json(document)


def revealed(event_type: str, payload: str, pepper: str) -> str:
    """The body to send: the stored payload with its sealed fields decrypted (InvalidToken
    when the pepper has changed since)."""
    if event_type not in SEALED_FIELDS:
        return payload
    return _with_sealed_fields(event_type, payload, lambda token: unseal(pepper, _SEAL_PURPOSE, token))


def forgotten(event_type: str, payload: str) -> str | None:
    """The payload to keep once every delivery has ended (sealed fields null); None for an
    event without sealed fields."""
    if event_type not in SEALED_FIELDS:
        return None
    return _with_sealed_fields(event_type, payload, lambda _: None)


_INSERT = insert(OutboxEvent.__table__)


@dataclass(frozen=True)
class RecordedEvent:
    """The outbox row as written, for reading (a plain value: no ORM object on the register's
    path)."""

    company_id: str
    id: str
    type: str
    payload: str
    created_at: datetime


def record_event(session: Session, company_id: str, event_type: str, data: dict,
                 pepper: str | None = None) -> RecordedEvent:
    """`pepper` encrypts the event's sealed fields; events that have some need it."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type}")
    if event_type in SEALED_FIELDS:
        if pepper is None:
            raise ValueError(f"{event_type} carries a credential: the pepper seals it")
        data = {**data, **{name: seal(pepper, _SEAL_PURPOSE, data[name])
                           for name in SEALED_FIELDS[event_type]}}
    now = utcnow()
    values = {"company_id": company_id, "id": new_id(), "type": event_type, "created_at": now,
              "dispatched_at": None,
              "payload": compact_json({"type": event_type, "timestamp": format_timestamp(now),
                                       "data": data})}
    # Written with the transaction's next statement; handed to the delivery queue once the
    # transaction has committed (app/services/unit_of_work.py).
    work = UnitOfWork.of(session)
    work.defer(_INSERT, values)
    event = RecordedEvent(company_id, values["id"], event_type, values["payload"], now)
    work.events.append(event)
    return event
