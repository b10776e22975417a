"""The company's webhooks: its endpoints — registered (the signing secret shown once), the secret
rotated with a grace, deleted — through the services and schemas of /v1/webhook-endpoints; the
latest deliveries; the dead letters, sent again as the operator's `flask webhooks replay` sends
them, but only the company's own."""
from __future__ import annotations

import logging

from flask import flash, render_template, request
from flask_babel import gettext as _
from redis.exceptions import RedisError

from app.api.webhooks_schemas import CreateWebhookEndpointRequest, RotateWebhookSecretRequest
from app.database.engine import request_session, utcnow
from app.operations.delivery_queue import enqueue_deliveries
from app.portal import forms
from app.portal.access import back_to, company_id, requires, settings, staff_actor
from app.portal.blueprint import bp
from app.services.webhooks import endpoints, history
from app.services.webhooks.endpoints import ALL_EVENTS, SECRET_GRACE_SECONDS
from app.services.webhooks.outbox import EVENT_TYPES

DEAD_SHOWN = 50

log = logging.getLogger("app.portal.webhooks")


def _page(*, secret=None, errors=(), status=200, form=None):
    db, company = request_session(), company_id()
    return render_template(
        "portal/webhooks.html", endpoints=endpoints.list_endpoints(db, company),
        events_of=endpoints.endpoint_events, deliveries=history.latest_deliveries(db, company),
        dead=history.dead_letters(db, company_id=company, limit=DEAD_SHOWN),
        latest=history.LATEST, dead_shown=DEAD_SHOWN, event_types=EVENT_TYPES,
        all_events=ALL_EVENTS, grace=SECRET_GRACE_SECONDS, secret=secret, errors=errors,
        form=form or {}), status


def _hand_over(revived) -> None:
    """To the worker. With Redis away nothing is lost: the worker's sweep finds the deliveries
    overdue and sends them."""
    try:
        enqueue_deliveries(settings(), revived)
    except RedisError:
        log.warning("could not enqueue the replayed deliveries; the sweep will send them",
                    exc_info=True)


@bp.get("/webhooks")
@requires("webhooks")
def webhooks():
    return _page()


@bp.post("/webhooks")
@requires("webhooks")
def create_webhook_endpoint():
    form = request.form
    typed = {"url": form.get("url", "").strip(), "events": form.getlist("events"),
             "description": form.get("description", "").strip() or None}

    def change():
        body = CreateWebhookEndpointRequest().load(typed)
        return endpoints.create_endpoint(
            request_session(), company_id(), url=body["url"], events=body["events"],
            description=body.get("description"), pepper=settings().api_key_pepper,
            now=utcnow(), actor=staff_actor())
    return forms.shown_once(change, _page, 201, form=form)


@bp.post("/webhooks/<endpoint_id>/rotate-secret")
@requires("webhooks")
def rotate_webhook_secret(endpoint_id: str):
    typed = {"gracePeriodSeconds": forms.whole(
        request.form.get("gracePeriodSeconds", str(SECRET_GRACE_SECONDS)))}

    def change():
        body = RotateWebhookSecretRequest().load(typed)
        return endpoints.rotate_secret(
            request_session(), company_id(), endpoint_id,
            grace_seconds=body["gracePeriodSeconds"], pepper=settings().api_key_pepper,
            now=utcnow(), actor=staff_actor())
    return forms.shown_once(change, _page, 201)


@bp.post("/webhooks/<endpoint_id>/delete")
@requires("webhooks")
def delete_webhook_endpoint(endpoint_id: str):
    def change():
        endpoints.delete_endpoint(request_session(), company_id(), endpoint_id, now=utcnow(),
                                  actor=staff_actor())
    return forms.saved(change, _("The endpoint is deleted: nothing more is sent to it."),
                       "portal.webhooks", _page)


@bp.post("/webhooks/events/<event_id>/replay")
@requires("webhooks")
def replay_webhook_event(event_id: str):
    db = request_session()
    revived, skipped = history.replay_event(db, event_id, company_id=company_id(), now=utcnow(),
                                            actor=staff_actor())  # another company's: 404
    db.commit()  # first: the worker's job must find the deliveries PENDING
    _hand_over(revived)
    if revived:
        flash(_("Sent again, with a fresh retry schedule: %(sent)s.", sent=len(revived)))
    if skipped:
        flash(_("Left dead, their endpoint being disabled or deleted: %(left)s.", left=skipped))
    return back_to("portal.webhooks")
