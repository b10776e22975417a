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

from app.db import utcnow
from app.models import OutboxEvent
from app.models.base import new_id
from app.statements import defer

EVENT_TYPES = (
    "customer.created", "reward.adjusted",
    "checkout.hold.created", "checkout.hold.released", "checkout.hold.expired",
    "sale.committed", "sale.returned", "catalog.synced", "otp.code_issued",
)


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


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


def record_event(session: Session, company_id: str, event_type: str, data: dict) -> RecordedEvent:
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type}")
    now = utcnow()
    values = {"company_id": company_id, "id": new_id(), "type": event_type, "created_at": now,
              "dispatched_at": None,
              "payload": json.dumps({"type": event_type, "timestamp": _timestamp(now), "data": data},
                                    separators=(",", ":"), ensure_ascii=False)}
    # A statement built once, sent with the transaction's next round trip: no ORM unit of
    # work on the register's path.
    defer(session, _INSERT, values)
    event = RecordedEvent(company_id, values["id"], event_type, values["payload"], now)
    # The app enqueues delivery of these ids once the transaction has committed.
    session.info.setdefault("recorded_events", []).append(event)
    return event
