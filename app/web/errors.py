"""Every error as JSON (docs/api.md#errors): HTTPValidationError for 422, {detail, code} otherwise.
Stack traces never reach a response."""
from __future__ import annotations

import logging

from flask import Flask, jsonify, request
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException, InternalServerError

from app.database.engine import database_unavailable
from app.services.errors import DomainError, InvalidField, RateLimited, conflict_at_commit

log = logging.getLogger("app.web.errors")

HTTP_CODES = {
    400: "bad_request", 401: "invalid_api_key", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
    415: "unsupported_media_type", 429: "rate_limited", 500: "internal_error",
    503: "not_ready",
}
WEBARGS_LOCATIONS = {"json": "body", "query": "query", "querystring": "query", "headers": "header",
                     "view_args": "path", "path": "path", "form": "body"}
MESSAGE_TYPES = {
    "Missing data for required field.": "missing",
    "Unknown field.": "unknown_field",
    "Field may not be null.": "null",
}


def validation_response(items: list[dict], status: int = 422):
    return jsonify(detail=items), status


def _flatten(messages, loc: list) -> list[dict]:
    """webargs/marshmallow nest messages by location and field; FastAPI clients expect a flat
    list of {loc, msg, type}. List positions arrive as ints; every string key is a field name
    as the client sent it (an unknown "³" or "7" stays a string)."""
    if isinstance(messages, dict):
        items = []
        for key, value in messages.items():
            if key == "_schema":
                items.extend(_flatten(value, loc))
            else:
                items.extend(_flatten(value, loc + [key]))
        return items
    if isinstance(messages, (list, tuple)) and messages and all(isinstance(m, str) for m in messages):
        return [{"loc": loc, "msg": m, "type": MESSAGE_TYPES.get(m, "value_error")} for m in messages]
    if isinstance(messages, (list, tuple)):
        return [item for m in messages for item in _flatten(m, loc)]
    return [{"loc": loc, "msg": str(messages), "type": "value_error"}]


def webargs_items(messages: dict) -> list[dict]:
    items = []
    for location, fields in messages.items():
        items.extend(_flatten(fields, [WEBARGS_LOCATIONS.get(location, location)]))
    return items


def error_body(status: int, code: str, detail: str, headers: dict | None = None, **extra):
    body = {"detail": detail, "code": code, **extra}
    return jsonify(body), status, headers or {}


def http_error_response(error: HTTPException):
    if error.code == 422 and getattr(error, "data", None) and "messages" in error.data:
        return validation_response(webargs_items(error.data["messages"]))
    if isinstance(error, InternalServerError):
        original = getattr(error, "original_exception", None)
        if isinstance(original, DBAPIError):  # raised by the commit, after the view
            return database_error_response(original)
        if original is not None:
            log.exception("unhandled error", exc_info=original)
        return error_body(500, "internal_error", "internal error")
    code = HTTP_CODES.get(error.code or 500, "error")
    detail = error.description if error.code != 404 else "not found"
    return error_body(error.code or 500, code, detail)


def domain_error_response(error: DomainError):
    if isinstance(error, InvalidField):
        return validation_response([{"loc": error.loc, "msg": error.detail, "type": error.type}])
    headers = {}
    if isinstance(error, RateLimited):
        headers["Retry-After"] = str(error.retry_after)
    if error.code == "insufficient_scope":
        headers["WWW-Authenticate"] = f'Bearer error="insufficient_scope", scope="{error.extra.get("scope", "")}"'
        return error_body(error.status, error.code, error.detail, headers)
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return error_body(error.status, error.code, error.detail, headers, **error.extra)


def unexpected_error_response(error: Exception):
    # The route's template, not the path, which may carry a card token or gift-card code.
    log.exception("unhandled error on %s %s", request.method,
                  request.url_rule.rule if request.url_rule else "an unmatched path")
    return error_body(500, "internal_error", "internal error")


def database_error_response(error: DBAPIError):
    """The database away (a restart, a failover): 503, and the register tries again in a
    second. The transaction was rolled back, so nothing was changed (docs/api.md#availability). A
    unique violation a deferred write found at the commit answers its Conflict."""
    conflict = conflict_at_commit(error)
    if conflict is not None:
        return domain_error_response(conflict)
    if not database_unavailable(error):
        return unexpected_error_response(error)
    route = request.url_rule.rule if request.url_rule else "(no route)"  # paths carry tokens
    reason = (str(error.orig).strip().splitlines() or [""])[0]
    log.warning("database unavailable on %s %s: %s", request.method, route, reason)
    return error_body(503, "database_unavailable", "the database cannot be reached; try again",
                      {"Retry-After": "1"})


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(DomainError, domain_error_response)
    app.register_error_handler(DBAPIError, database_error_response)
    app.register_error_handler(HTTPException, http_error_response)
    app.register_error_handler(Exception, unexpected_error_response)
