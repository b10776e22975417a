"""The audit record's query and answer."""
from __future__ import annotations

import marshmallow as ma

from app.api.base import ResponseSchema
from app.api.enums import Choice
from app.api.fields import Timestamp
from app.api.paging import OffsetArgs, offset_page_schema
from app.services.audit.events import ACTIONS, ACTOR_KINDS


class AuditEventArgs(OffsetArgs):
    action = Choice("AuditAction", ACTIONS)
    actorKind = Choice("AuditActorKind", ACTOR_KINDS, attribute="actor_kind")
    from_ = Timestamp(data_key="from", attribute="since",
                      metadata={"description": "Events at or after this instant (RFC 3339)"})
    to = Timestamp(attribute="until",
                   metadata={"description": "Events before this instant (RFC 3339)"})


class AuditActor(ResponseSchema):
    kind = Choice("AuditActorKind", ACTOR_KINDS, required=True)
    id = ma.fields.String(required=True, allow_none=True)
    name = ma.fields.String(required=True, allow_none=True)


class AuditTarget(ResponseSchema):
    type = ma.fields.String(required=True, metadata={"example": "ledger_entry"})
    id = ma.fields.String(required=True)


class AuditEventResponse(ResponseSchema):
    """Dumped from app.services.audit.events.as_record's dict."""

    id = ma.fields.String(required=True)
    at = Timestamp(required=True)
    actor = ma.fields.Nested(AuditActor, required=True)
    action = Choice("AuditAction", ACTIONS, required=True)
    target = ma.fields.Nested(AuditTarget, required=True)
    address = ma.fields.String(required=True, allow_none=True,
                               metadata={"description": "The client's address"})


AuditEventPageResponse = offset_page_schema(AuditEventResponse, "AuditEventPageResponse")
