"""The life of a request: its id, its one transaction, its log line, and the hand-off of the
events it recorded to the delivery queue once they are committed."""
from __future__ import annotations

import logging
import re
import time
import uuid

from flask import Flask, Response, current_app, g, request
from werkzeug.exceptions import NotFound as NoRoute
from werkzeug.routing import RequestRedirect

from app.auth import authenticate_request
from app.delivery_queue import hand_over_events
from app.metrics import observe_request
from app.proxies import client_address
from app.services.errors import InvalidField, NotFound

log = logging.getLogger("app.requests")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def _begin() -> None:
    g.started = time.perf_counter()
    given = request.headers.get("X-Request-Id", "")
    g.request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
    _refuse_redirects()
    authenticate_request()
    _refuse_nul()


def _refuse_redirects() -> None:
    """Werkzeug's routing redirects to the URL it prefers (a rule's trailing slash, its
    defaults) on the request's Host header, which the caller chose: no response is built from
    it (CONTRACT §12), so a path that only a redirect would serve is a 404."""
    if isinstance(request.routing_exception, RequestRedirect):
        request.routing_exception = NoRoute()  # answered as any unmatched path is


def _refuse_nul() -> None:
    """PostgreSQL text cannot hold a NUL character (the driver fails with a 500). Path and
    query values reach queries without a schema of their own: refuse NUL there for every
    route; body schemas refuse it field by field."""
    if "\x00" in request.path:
        raise NotFound()
    for name, value in request.args.items(multi=True):
        if "\x00" in value or "\x00" in name:
            raise InvalidField(["query", name], "must not contain the NUL character", "string_nul")


def _finish(response: Response) -> Response:
    session = g.pop("db_session", None)
    if session is not None:
        try:
            if response.status_code < 400:
                session.commit()
                events = session.take_committed_events()
                if events:
                    app = current_app._get_current_object()
                    # After the response is sent: delivery never costs the register time.
                    response.call_on_close(lambda: hand_over_events(app, events))
            else:
                session.rollback()
        finally:
            session.close()
    response.headers["X-Request-Id"] = g.get("request_id", "")
    _log(response.status_code)
    return response


def _teardown(error: BaseException | None) -> None:
    session = g.pop("db_session", None)
    if session is not None:  # an exception escaped before _finish ran
        session.rollback()
        session.close()


def _log(status: int) -> None:
    principal = g.get("principal")
    route = request.url_rule.rule if request.url_rule else None
    seconds = time.perf_counter() - g.get("started", time.perf_counter())
    observe_request(route, request.method, status, seconds)
    log.info("request", extra={"fields": {
        "method": request.method,
        # The route's template, never the path: card tokens and gift-card codes travel in it.
        # A path that matches no route (404, 405) is not logged at all.
        "route": route,
        "status": status,
        "client": _client(),
        "scheme": request.scheme,
        "durationMs": round(seconds * 1000, 2),
        "companyId": principal.company_id if principal else None,
        "credentialId": principal.credential_id if principal else None,
    }})


def _client() -> str | None:
    settings = current_app.config["SETTINGS"]
    return client_address(request.remote_addr, request.headers.get("X-Forwarded-For"),
                          settings.forwarded_allow_ips)


def register_request_hooks(app: Flask) -> None:
    app.before_request(_begin)
    app.after_request(_finish)
    app.teardown_request(_teardown)
