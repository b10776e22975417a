"""Who is calling: the key names the company and its scopes. Runs before every /v1 view, in
the order of docs/api.md#errors: authentication (401), scope (403), body media type and size
(415, 413), the register's X-Loyalty-Pos-Key; then the view validates and acts."""
from __future__ import annotations

from flask import Request, current_app

from app.web.views import declared_operation
from app.web.bodies import chunked_body_exceeds
from app.database.engine import request_session, utcnow
from app.web.idempotency import claim_ahead
from app.services.errors import DomainError, Forbidden, InvalidField
from app.services.tenancy import credentials

BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")
POS_KEY_MAX_LENGTH = 128


class Unauthorized(DomainError):
    status = 401


def bearer_key(req: Request) -> str:
    header = req.headers.get("Authorization")
    if not header:
        raise Unauthorized("an API key is required: Authorization: Bearer <key>", code="missing_api_key")
    scheme, _, key = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <key>'", code="invalid_api_key")
    return key.strip()


def authenticate_request(req: Request, state) -> None:
    """`req` and `state` are the request and its `g` themselves (app/web/requests.py)."""
    if not req.path.startswith("/v1/"):
        return
    app = current_app._get_current_object()
    settings = app.config["SETTINGS"]
    pos_key = req.headers.get("X-Loyalty-Pos-Key")
    operation = declared_operation(app, req.endpoint, req.method)
    claim = claim_ahead(req, operation, app.extensions["engine"].dialect.name == "postgresql")
    holder = credentials.authenticate(request_session(), bearer_key(req),
                                      pepper=settings.api_key_pepper,
                                      now=utcnow() if claim is None else claim.now,
                                      pos_key=pos_key if _may_name_terminal(pos_key) else None,
                                      claim=claim)
    if holder is None:
        raise Unauthorized("the API key is not valid", code="invalid_api_key")
    state.principal = holder
    state.company_id = holder.company_id
    if claim is not None:
        state.claim = claim  # the idempotent view's (app/web/idempotency.py)

    if operation is not None and operation.scope and operation.scope not in holder.scopes:
        raise Forbidden(f"this key lacks the scope {operation.scope}", code="insufficient_scope",
                        scope=operation.scope)
    _check_body(req, app.config["MAX_CONTENT_LENGTH"])
    state.terminal = _terminal(pos_key, holder, operation is not None
                               and operation.register_of_record)


def _check_body(req: Request, limit: int) -> None:
    if req.method not in BODY_METHODS:
        return
    length = req.content_length
    if (length and length > limit) or (length is None and chunked_body_exceeds(req, limit)):
        raise DomainError("the request body is too large", code="payload_too_large", status=413)
    if (length or req.headers.get("Transfer-Encoding")) and not req.is_json:
        raise DomainError("the request body must be JSON (Content-Type: application/json)",
                          code="unsupported_media_type", status=415)


def _may_name_terminal(pos_key: str | None) -> bool:
    """Worth looking up with the key. No posKey is that long or holds a NUL (PostgreSQL text
    cannot); the error for the first comes after the key's own checks."""
    return pos_key is not None and len(pos_key) <= POS_KEY_MAX_LENGTH and "\x00" not in pos_key


def _terminal(pos_key: str | None, holder: credentials.KeyHolder, of_record: bool):
    """The register's terminal, found together with the key (one round trip); None when the
    request names none. `of_record`: the operation reports what the register did earlier
    (a sale made offline), so the terminal may have been disabled since (the operation
    requires the header itself, once its body is read)."""
    if pos_key is None:
        return None
    if len(pos_key) > POS_KEY_MAX_LENGTH:
        raise InvalidField(["header", "X-Loyalty-Pos-Key"],
                           f"at most {POS_KEY_MAX_LENGTH} characters", "string_too_long")
    if holder.terminal is None:
        raise Forbidden("X-Loyalty-Pos-Key names no terminal of this company",
                        code="terminal_inactive")
    if not (holder.terminal.active or of_record):
        raise Forbidden("X-Loyalty-Pos-Key names no active terminal of this company",
                        code="terminal_inactive")
    return holder.terminal
