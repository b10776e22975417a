"""One idempotency mechanism for every operation that takes an Idempotency-Key (CONTRACT §7).

The record is inserted in the request's own transaction before the effect, and completed
with the response before commit: exactly one effect whatever the retries. A concurrent
duplicate blocks on the record's primary key until the first request ends, then replays it.
"""
from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from functools import wraps

from flask import Response, current_app, g, request
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from app.db import request_session, utcnow
from app.models import IdempotencyRecord
from app.services.errors import Conflict, InvalidField

HEADER = "Idempotency-Key"
REPLAY_HEADER = "Idempotent-Replayed"


def _key(low: int, high: int) -> str:
    key = request.headers.get(HEADER)
    if key is None:
        raise InvalidField(["header", HEADER], "Field required", "missing")
    if not low <= len(key) <= high:
        raise InvalidField(["header", HEADER], f"must be {low} to {high} characters long",
                           "string_length")
    return key


def fingerprint() -> str:
    """Method, route, path parameters and the body as canonical JSON."""
    raw = request.get_data(cache=True)
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw.decode("utf-8", "replace")
    canonical = json.dumps([request.method, request.url_rule.rule, request.view_args or {}, body],
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _replay(record: IdempotencyRecord, expected: str) -> Response:
    if record.fingerprint != expected:
        raise InvalidField(["header", HEADER],
                           "this Idempotency-Key was used with a different request",
                           "idempotency_key_reused")
    if record.status_code is None:
        raise Conflict("a request with this Idempotency-Key is still being processed",
                       code="idempotency_key_in_use")
    response = Response(record.response_body, status=record.status_code, mimetype="application/json")
    response.headers[REPLAY_HEADER] = "true"
    return response


def idempotent(low: int, high: int):
    def decorator(view):
        @wraps(view)
        def wrapper(*args, **kwargs):
            key = _key(low, high)
            session = request_session()
            operation = f"{request.method} {request.url_rule.rule}"
            expected = fingerprint()
            ident = {"company_id": g.company_id, "operation": operation, "key": key}
            ttl = timedelta(seconds=current_app.config["SETTINGS"].idempotency_ttl)

            record = session.get(IdempotencyRecord, ident)
            if record is not None and record.created_at <= utcnow() - ttl:
                session.delete(record)
                session.flush()
                record = None
            if record is not None:
                return _replay(record, expected)

            record = IdempotencyRecord(**ident, fingerprint=expected, created_at=utcnow())
            session.add(record)
            try:
                session.flush()
            except IntegrityError:
                # A concurrent request holds the key and has committed: replay what it did.
                session.rollback()
                record = session.get(IdempotencyRecord, ident)
                if record is None:
                    raise Conflict("a request with this Idempotency-Key is still being processed",
                                   code="idempotency_key_in_use") from None
                return _replay(record, expected)

            response = current_app.make_response(view(*args, **kwargs))
            if response.status_code < 400:
                record.status_code = response.status_code
                record.response_body = response.get_data(as_text=True)
                session.flush()
            return response

        return wrapper

    return decorator


def purge_expired(session, ttl_seconds: int) -> int:
    """Delete records older than the TTL; returns how many went."""
    result = session.execute(delete(IdempotencyRecord).where(
        IdempotencyRecord.created_at < utcnow() - timedelta(seconds=ttl_seconds)))
    return result.rowcount or 0
