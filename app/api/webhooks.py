"""Webhook endpoints: register (the signing secret shown once), list, rotate the secret, delete."""
from __future__ import annotations

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.webhooks_schemas import (CreateWebhookEndpointRequest, IssuedWebhookEndpointResponse,
                                      RotateWebhookSecretRequest, WebhookEndpointListResponse)
from app.web.actors import key_actor
from app.database.engine import request_session, utcnow
from app.web.idempotency import SECRET_SHOWN_ONCE
from app.services.webhooks import endpoints

blp = Blueprint("webhooks", __name__, url_prefix="/v1", description="Webhook endpoints")


def _issued(endpoint, secret):
    endpoint.secret = secret  # transient: dumped once in this response, stored only encrypted
    return endpoint


@blp.route("/webhook-endpoints")
class WebhookEndpoints(MethodView):
    @blp.operation("createWebhookEndpoint", scope="webhooks:write",
                   key_refused=SECRET_SHOWN_ONCE)
    @blp.arguments(CreateWebhookEndpointRequest)
    @blp.response(201, IssuedWebhookEndpointResponse)
    def post(self, body):
        """Register an https:// endpoint on an allowed host for the named events (or "*").

        The url must be https:// on a host the operator allowed (`flask webhooks allow-host`), else
        a 422 on `body.url`; deliveries to private or loopback addresses are refused at connection
        time. The answer's `secret` (`whsec_…`) signs every delivery (Standard Webhooks) and is
        shown this once, so an Idempotency-Key is refused (422). Deliveries retry on the schedule of
        docs/api.md#webhooks and end in dead letters.
        """
        endpoint, secret = endpoints.create_endpoint(
            request_session(), g.company_id, url=body["url"], events=body["events"],
            description=body.get("description"),
            pepper=current_app.config["SETTINGS"].api_key_pepper, now=utcnow(), actor=key_actor())
        return _issued(endpoint, secret)

    @blp.operation("listWebhookEndpoints", scope="webhooks:read")
    @blp.response(200, WebhookEndpointListResponse)
    def get(self):
        """The company's endpoints, never their secrets.

        Each endpoint's url, events and description; the signing secret is never shown again.
        Changes nothing.
        """
        return {"items": endpoints.list_endpoints(request_session(), g.company_id)}


@blp.route("/webhook-endpoints/<endpoint_id>")
class WebhookEndpointById(MethodView):
    @blp.operation("deleteWebhookEndpoint", scope="webhooks:write")
    @blp.response(204)
    def delete(self, endpoint_id):
        """Stop sending to the endpoint; deliveries not yet made are not sent.

        204: no event is sent to it any more, including those still waiting for a retry. Another
        company's id is a 404.
        """
        endpoints.delete_endpoint(request_session(), g.company_id, endpoint_id, now=utcnow(),
                                  actor=key_actor())


@blp.route("/webhook-endpoints/<endpoint_id>/rotate-secret")
class WebhookEndpointSecretRotation(MethodView):
    @blp.operation("rotateWebhookEndpointSecret", scope="webhooks:write",
                   key_refused=SECRET_SHOWN_ONCE)
    @blp.arguments(RotateWebhookSecretRequest, required=False)
    @blp.response(201, IssuedWebhookEndpointResponse)
    def post(self, body, endpoint_id):
        """A new signing secret for the endpoint, shown once.

        Until `gracePeriodSeconds` (0..604800, default 86400) have passed, every delivery carries
        two signatures, `v1,<new> v1,<old>`, so a receiver verifying with either secret accepts
        it while it switches; then only the new one's. A second rotation during a grace keeps
        only the secret it replaces. The answer shows the secret this once, so an
        Idempotency-Key is refused (422). Another company's or a deleted endpoint is a 404.
        """
        endpoint, secret = endpoints.rotate_secret(
            request_session(), g.company_id, endpoint_id,
            grace_seconds=body.get("gracePeriodSeconds", endpoints.SECRET_GRACE_SECONDS),
            pepper=current_app.config["SETTINGS"].api_key_pepper, now=utcnow(), actor=key_actor())
        return _issued(endpoint, secret)
