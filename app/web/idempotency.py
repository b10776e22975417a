"""One idempotency mechanism for every operation that takes an Idempotency-Key
(docs/api.md#idempotency).

The record is inserted in the request's own transaction before the effect, and completed
with the response before commit: exactly one effect whatever the retries. A concurrent
duplicate blocks on the record's primary key until the first request ends, then replays it.
Every register request passes here, so the record is read and written through the request's
unit of work (app/services/unit_of_work.py), with statements built once.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache, wraps

from flask import Request, Response, current_app, g, request
from sqlalchemy import bindparam, cast, delete, exists, insert, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import IntegrityError

from app.web.bodies import json_body, raw_body
from app.database.engine import conflict_insert, request_session, utcnow
from app.models import IdempotencyRecord
from app.models.idempotency import key_digest
from app.services.errors import Conflict, InvalidField
from app.services.unit_of_work import UnitOfWork
from app.wire import packed, unpacked

HEADER = "Idempotency-Key"
REPLAY_HEADER = "Idempotent-Replayed"
# Why a create that issues a key or a signing secret refuses a key: the secret is stored only
# as a digest or encrypted, so a replayable answer would be the one copy of it in the clear.
SECRET_SHOWN_ONCE = ("the answer holds a secret shown once, so it is never stored for a replay; "
                     "send this request without Idempotency-Key")

_RECORDS = IdempotencyRecord.__table__
# Found by the primary key (company, digest of operation and key); the operation and the key
# themselves are compared too, so a record is only ever its own key's.
_IDENT = (_RECORDS.c.company_id == bindparam("b_company_id"),
          _RECORDS.c.key_digest == bindparam("b_key_digest"),
          _RECORDS.c.operation == bindparam("b_operation"), _RECORDS.c.key == bindparam("b_key"))
_RECORD_KEY = [_RECORDS.c.company_id, _RECORDS.c.key_digest]
_FIND = select(_RECORDS.c.fingerprint, _RECORDS.c.status_code, _RECORDS.c.answer,
               _RECORDS.c.response_body,
               _RECORDS.c.created_at).where(*_IDENT)
_FORGET = delete(_RECORDS).where(*_IDENT)
_BEGIN = insert(_RECORDS)
_CLAIM = {name: conflict_insert(name, _RECORDS)
          .on_conflict_do_nothing(index_elements=_RECORD_KEY)
          .returning(_RECORDS.c.key)
          for name in ("postgresql", "sqlite")}
_COMPLETE = update(_RECORDS).where(*_IDENT).values(status_code=bindparam("b_status_code"),
                                                   answer=bindparam("b_answer"),
                                                   fingerprint=bindparam("b_fingerprint"))


# Taken with the key: on PostgreSQL an idempotent request's record is inserted by the request's
# first statement, the key's lookup (app/web/auth.py), which saves the claim its own round trip.
# The body is read only after the key's checks (docs/api.md#errors), so the record is taken without
# its fingerprint (NO_FINGERPRINT) and the completion writes it. No other request sees the
# record in between: the completion commits with it, and an error rolls both back (no
# operation that takes a key commits before its end).
NO_FINGERPRINT = ""


@dataclass
class Claim:
    """The record an idempotent request takes with its key's lookup; `claimed` is whether the
    key was free (False: taken before, by a finished request or a running one)."""

    operation: str
    key: str
    now: datetime
    claimed: bool = False

    def params(self) -> dict:
        return {"c_key_digest": key_digest(self.operation, self.key),
                "c_operation": self.operation, "c_key": self.key,
                "c_fingerprint": NO_FINGERPRINT, "c_now": self.now}

    @staticmethod
    @cache  # the lookups are built once (app/services/tenancy/credentials.py), so is this
    def fold(lookup):
        """`lookup` (the key holder's row, one at most) with the claim made for its company
        when the key is valid: its columns, and `claimed`."""
        holder = lookup.cte("holder")
        record = select(holder.c.company_id,
                        *(cast(bindparam(name, type_=column.type), column.type)
                          for name, column in (("c_key_digest", _RECORDS.c.key_digest),
                                               ("c_operation", _RECORDS.c.operation),
                                               ("c_key", _RECORDS.c.key),
                                               ("c_fingerprint", _RECORDS.c.fingerprint),
                                               ("c_now", _RECORDS.c.created_at)))
                        ).where(holder.c.revoked_at.is_(None))
        claimed = (postgresql.insert(_RECORDS)
                   .from_select(["company_id", "key_digest", "operation", "key", "fingerprint",
                                 "created_at"], record)
                   .on_conflict_do_nothing(index_elements=_RECORD_KEY)
                   .returning(_RECORDS.c.key).cte("claimed"))
        return select(holder, exists(select(claimed.c.key)).label("claimed"))


def claim_ahead(req: Request, operation, postgresql_: bool) -> Claim | None:
    """The claim to take with the key's lookup, when this request makes one there: an
    operation that honours a key, sent one of a length it takes, on PostgreSQL. Otherwise the
    wrapper below claims, as on SQLite, and answers what is wrong with the key."""
    if (not postgresql_ or operation is None or operation.idempotency is None
            or operation.key_refused is not None):
        return None
    key = req.headers.get(HEADER)
    low, high = operation.idempotency
    if key is None or not low <= len(key) <= high or "\x00" in key:
        return None
    return Claim(f"{req.method} {req.url_rule.rule}", key, utcnow())


def _key(req: Request, low: int, high: int, required: bool = True) -> str | None:
    key = req.headers.get(HEADER)
    if key is None and not required:
        return None
    if key is None:
        raise InvalidField(["header", HEADER], "Field required", "missing")
    if not low <= len(key) <= high:
        raise InvalidField(["header", HEADER], f"must be {low} to {high} characters long",
                           "string_length")
    return key


# Made once: json.dumps with options makes an encoder a call.
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def fingerprint(req: Request, route: str) -> str:
    """Method, route, path parameters and the body as canonical JSON."""
    body = json_body() if req.is_json else raw_body().decode("utf-8", "replace")
    canonical = _canonical([req.method, route, req.view_args or {}, body])
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _replay(record, expected: str) -> Response:
    if record.fingerprint != expected:
        raise InvalidField(["header", HEADER],
                           "this Idempotency-Key was used with a different request",
                           "idempotency_key_reused")
    if record.status_code is None:
        raise Conflict("a request with this Idempotency-Key is still being processed",
                       code="idempotency_key_in_use")
    body = record.response_body if record.answer is None else unpacked(record.answer)
    response = Response(body, status=record.status_code, mimetype="application/json")
    response.headers[REPLAY_HEADER] = "true"
    return response


def refuse_key(reason: str):
    """A create whose answer cannot be kept for a replay: a key sent is refused rather than
    ignored, so no client believes its retry is safe."""
    def decorator(view):
        @wraps(view)
        def wrapper(*args, **kwargs):
            if HEADER in request.headers:
                raise InvalidField(["header", HEADER], reason, "idempotency_key_not_supported")
            return view(*args, **kwargs)

        return wrapper

    return decorator


def idempotent(low: int, high: int, required: bool = True):
    def decorator(view):
        @wraps(view)
        def wrapper(*args, **kwargs):
            # The request, the app and `g` themselves: each use of a proxy costs
            # (app/web/requests.py).
            req, app = request._get_current_object(), current_app._get_current_object()
            state = g._get_current_object()
            key = _key(req, low, high, required)
            if key is None:  # optional and not given: no record, no replay
                return view(*args, **kwargs)
            session = request_session()
            work = UnitOfWork.of(session)
            route = req.url_rule.rule
            operation = f"{req.method} {route}"
            expected = fingerprint(req, route)
            company_id = state.company_id
            digest = key_digest(operation, key)
            ident = {"b_company_id": company_id, "b_key_digest": digest, "b_operation": operation,
                     "b_key": key}
            ttl = timedelta(seconds=app.config["SETTINGS"].idempotency_ttl)
            ahead = state.pop("claim", None)  # taken with the key's lookup (Claim), or not
            now = utcnow() if ahead is None else ahead.now
            claim = {"company_id": company_id, "key_digest": digest, "operation": operation,
                     "key": key, "fingerprint": expected, "status_code": None, "answer": None,
                     "created_at": now}
            if ahead is not None:
                claimed = ahead.claimed
            else:  # one statement on the usual path: the key is new and taken at once
                claimed = work.run(_CLAIM[work.connection.dialect.name], claim).first() is not None
            if not claimed:
                # Taken already: by a request that finished (its answer is replayed), by one
                # still running (waited for, on PostgreSQL), or long ago (taken over).
                record = work.run(_FIND, ident).first()
                if record is None:
                    raise Conflict("a request with this Idempotency-Key is still being processed",
                                   code="idempotency_key_in_use")
                if record.created_at > now - ttl:
                    return _replay(record, expected)
                work.run(_FORGET, ident)
                try:
                    work.run(_BEGIN, claim)
                except IntegrityError:
                    session.rollback()  # another request took the expired key just now
                    raise Conflict("a request with this Idempotency-Key is still being processed",
                                   code="idempotency_key_in_use") from None

            response = app.make_response(view(*args, **kwargs))
            if response.status_code < 400:
                # The effect's writes and the record's completion go together with the commit,
                # one round trip for all (with its COMMIT, on PostgreSQL: UnitOfWork.commit);
                # the ORM's changes, if any, in a flush before. A write that fails there fails
                # the whole request as it would here (app/web/errors.py: raised by the commit).
                if session.new or session.dirty or session.deleted:
                    session.flush()
                work.defer(_COMPLETE, {
                    **ident, "b_status_code": response.status_code, "b_fingerprint": expected,
                    "b_answer": packed(response.get_data())})
            return response

        return wrapper

    return decorator

