"""The life of a request: its id, its one transaction, its log line, and the hand-off of the
events it recorded to the delivery queue once they are committed."""
from __future__ import annotations

import logging
import re
import time
import uuid

from flask import Flask, Request, Response, current_app, g, request
from werkzeug.exceptions import NotFound as NoRoute
from werkzeug.routing import RequestRedirect

from app.web.auth import authenticate_request
from app.web.bodies import read_what_is_left
from app.operations.delivery_queue import hand_over_events
from app.web.metrics import observe_request
from app.web.proxies import client_address
from app.services.errors import InvalidField, NotFound

log = logging.getLogger("app.requests")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def _begin() -> None:
    # The hooks read the request and `g` themselves, not through Flask's proxies: each use of a
    # proxy costs a failed attribute lookup and two calls (werkzeug's LocalProxy), and a
    # register's checkout made some 290 of them (docs/performance.md).
    req, state = request._get_current_object(), g._get_current_object()
    state.started = time.perf_counter()
    given = req.headers.get("X-Request-Id", "")
    state.request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
    _refuse_doubled_slashes(req)
    _refuse_redirects(req)
    authenticate_request(req, state)
    _refuse_nul(req)


def _refuse_doubled_slashes(req: Request) -> None:
    """A path with a doubled slash names nothing of ours. Werkzeug strips the slashes a path
    begins with before routing it (and from `request.path`), so `GET //cards/<token>` would be
    the card page: the path as the server received it (PATH_INFO) is what is judged."""
    if "//" in req.environ.get("PATH_INFO", ""):
        raise NoRoute()  # answered as any unmatched path is


def _refuse_redirects(req: Request) -> None:
    """Werkzeug's routing redirects to the URL it prefers (a rule's trailing slash, its
    defaults) on the request's Host header, which the caller chose: no response is built from
    it (docs/api.md#cards), so a path that only a redirect would serve is a 404."""
    if isinstance(req.routing_exception, RequestRedirect):
        req.routing_exception = NoRoute()  # answered as any unmatched path is


def _refuse_nul(req: Request) -> None:
    """PostgreSQL text cannot hold a NUL character (the driver fails with a 500). Path and
    query values reach queries without a schema of their own: refuse NUL there for every
    route; body schemas refuse it field by field."""
    if "\x00" in req.path:
        raise NotFound()
    if not req.query_string:  # the register's requests: no query to parse into `args`
        return
    if req.path.startswith("/passkit/"):
        return  # Apple's protocol: a tag it did not give (any text) reads as absent, not a 422
    for name, value in req.args.items(multi=True):
        if "\x00" in value or "\x00" in name:
            raise InvalidField(["query", name], "must not contain the NUL character", "string_nul")


def _finish(response: Response) -> Response:
    state = g._get_current_object()
    session = state.pop("db_session", None)
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
    response.headers["X-Request-Id"] = state.get("request_id", "")
    _log(request._get_current_object(), state, response.status_code)
    return response


def _teardown(error: BaseException | None) -> None:
    session = g._get_current_object().pop("db_session", None)
    if session is not None:  # an exception escaped before _finish ran
        session.rollback()
        session.close()


def _log(req: Request, state, status: int) -> None:
    principal = state.get("principal")
    rule = req.url_rule
    route = rule.rule if rule else None
    seconds = time.perf_counter() - state.get("started", time.perf_counter())
    observe_request(route, req.method, status, seconds)
    if not log.isEnabledFor(logging.INFO):
        return
    log.info("request", extra={"fields": {
        "method": req.method,
        # The route's template, never the path: card tokens and gift-card codes travel in it.
        # A path that matches no route (404, 405) is not logged at all.
        "route": route,
        "status": status,
        "client": _client(req),
        "scheme": req.scheme,
        "durationMs": round(seconds * 1000, 2),
        "companyId": principal.company_id if principal else None,
        "credentialId": principal.credential_id if principal else None,
    }})


def _client(req: Request) -> str | None:
    settings = current_app._get_current_object().config["SETTINGS"]
    return client_address(req.remote_addr, req.headers.get("X-Forwarded-For"),
                          settings.forwarded_allow_ips)


def register_request_hooks(app: Flask) -> None:
    app.before_request(_begin)
    app.after_request(_finish)
    app.after_request(read_what_is_left)
    app.teardown_request(_teardown)
