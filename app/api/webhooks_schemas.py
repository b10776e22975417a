import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.enums import Choice, list_of
from app.api.fields import Timestamp, no_nul
from app.services.webhooks.endpoints import (ALL_EVENTS, MAX_SECRET_GRACE_SECONDS,
                                             SECRET_GRACE_SECONDS, endpoint_events)
from app.services.webhooks.outbox import EVENT_TYPES

EVENT_NAMES = (*EVENT_TYPES, ALL_EVENTS)


class CreateWebhookEndpointRequest(Schema):
    url = ma.fields.String(required=True, validate=ma.validate.Length(1, 2000),
                           metadata={"description": "https:// on a host the operator has allowed"})
    events = ma.fields.List(
        Choice("EventName", EVENT_NAMES), required=True,
        validate=ma.validate.Length(min=1),
        metadata={"description": 'Event names, or ["*"] for every event. reward.expiring '
                                  '{customerId, amount, expiresAt}: once per lot of points, '
                                  'expiryReminderDays before it expires; reward.expired '
                                  '{customerId, amount, expiredAt, balance}: each EXPIRY entry'})
    description = ma.fields.String(allow_none=True, validate=[ma.validate.Length(max=500), no_nul])

    @ma.validates("events")
    def _all_or_names(self, events, **_kwargs):
        if ALL_EVENTS in events and len(events) > 1:
            raise ma.ValidationError('"*" stands alone: every event, or a list of names')

    @ma.post_load
    def _unique_events(self, data, **_kwargs):
        data["events"] = list(dict.fromkeys(data["events"]))
        return data


class RotateWebhookSecretRequest(Schema):
    gracePeriodSeconds = ma.fields.Integer(
        load_default=SECRET_GRACE_SECONDS, strict=True,
        validate=ma.validate.Range(0, MAX_SECRET_GRACE_SECONDS),
        metadata={"description": "How long deliveries still carry a signature by the secret "
                                  "being replaced, beside the new one's; 0: the new one alone "
                                  "at once. A secret older than the one being replaced stops "
                                  "at once."})


class WebhookEndpointResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    url = ma.fields.String(required=True)
    events = ma.fields.Function(endpoint_events, required=True, metadata=list_of("EventName"))
    description = ma.fields.String(allow_none=True)
    state = Choice("WebhookEndpointState", ["ACTIVE", "DISABLED"], required=True)
    createdAt = Timestamp(attribute="created_at", required=True)
    disabledAt = Timestamp(attribute="disabled_at", allow_none=True,
                           metadata={"description": "When a 410 from the receiver disabled it"})


class IssuedWebhookEndpointResponse(WebhookEndpointResponse):
    secret = ma.fields.String(required=True, metadata={
        "description": "whsec_… signing secret; shown once, never again"})


class WebhookEndpointListResponse(ResponseSchema):
    items = ma.fields.List(ma.fields.Nested(WebhookEndpointResponse), required=True)
