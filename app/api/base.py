"""Our subclasses of flask-smorest's Api, Blueprint and Schema, and the one place where an
operation declares its scope, idempotency range and interface-document markers.

    @blp.route("/company")
    class CompanyView(MethodView):
        @blp.operation("getCompany", scope="company:read")
        @blp.response(200, CompanyResponse)
        def get(self): ...

`app.web.auth` reads the declared scope before the view runs (auth → scope → validation);
`operations(app)` walks the same declarations for the interface document and the tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

import flask_smorest
import marshmallow as ma
from flask import Flask, Response, request
from webargs.core import missing
from webargs.flaskparser import FlaskParser, is_json_request

from app.services.errors import InvalidField
from app.web.bodies import json_body, raw_body
from app.web.views import declared_operation
from app.wire import compact_json


class Schema(ma.Schema):
    """Request schemas reject unknown fields (a tenant id or a cashier PIN is a 422)."""

    class Meta:
        unknown = ma.RAISE


class ResponseSchema(ma.Schema):
    """Response schemas leave the document open to fields we add later (no
    `additionalProperties: false`), so a strict client keeps working when an answer grows.
    Answers are only dumped; the tests that load them ask for RAISE themselves."""

    class Meta:
        unknown = ma.EXCLUDE


class ValidationErrorItem(ResponseSchema):
    # Field names as strings, list positions as integers (docs/api.md#errors).
    loc = ma.fields.List(ma.fields.Raw(metadata={"anyOf": [{"type": "string"},
                                                           {"type": "integer"}]}), required=True)
    msg = ma.fields.String(required=True)
    type = ma.fields.String(required=True)


class HTTPValidationError(ResponseSchema):
    detail = ma.fields.List(ma.fields.Nested(ValidationErrorItem), required=True)


class ErrorResponse(ResponseSchema):
    detail = ma.fields.String(required=True, metadata={"description": "What went wrong, in words"})
    code = ma.fields.String(required=True, metadata={
        "description": "The machine code of the error (each response lists its codes)"})


class CustomerExistsError(ErrorResponse):
    """The 409 of an enrolment (or of its OTP challenge): `customerId` is there when the code
    is `customer_exists`, so a register retrying an enrolment learns the customer."""

    customerId = ma.fields.String(metadata={"description": "Only with customer_exists"})


class ReceiptCommittedError(ErrorResponse):
    """The 409 of a receipt that has its sale already (online or offline): `saleId` names it,
    so the register can reconcile its own record with the service's."""

    saleId = ma.fields.String(metadata={"description": "Only with receipt_already_committed"})


class Parser(FlaskParser):
    DEFAULT_VALIDATION_STATUS = 422
    # A query parameter the operation does not know is a 422, as an unknown body field is:
    # a misspelt `limit` or a `format` the operation does not have is never silently ignored.
    DEFAULT_UNKNOWN_BY_LOCATION = {**FlaskParser.DEFAULT_UNKNOWN_BY_LOCATION,
                                   "query": ma.RAISE, "querystring": ma.RAISE}

    def load_json(self, req, schema):
        # The one decoding every body gets (app.web.bodies), not webargs' own: a body that is
        # not JSON is refused there.
        if not is_json_request(req):
            return missing
        body = json_body()
        return missing if body is None else body


# The key a create honours when its client sends one (the spec requires none there): the
# widest range the spec gives any operation, so a client's keys for other operations fit.
OPTIONAL_KEY = (1, 128)
_BY_METHOD = object()


@dataclass(frozen=True)
class Operation:
    operation_id: str
    scope: str | None
    idempotency: tuple[int, int] | None  # the Idempotency-Key's length range where honoured
    group: str = "native"
    errors: tuple[str, ...] = ()
    # False: the Idempotency-Key may be left out (the request then has no replay protection).
    idempotency_required: bool = True
    key_refused: str | None = None  # why a key would mean nothing here (sent: a 422)
    # What the register did earlier, sent late (a sale made offline): X-Loyalty-Pos-Key names
    # a terminal of the company in whatever state it is now, and is documented as required
    # (the view requires it, after the body's checks).
    register_of_record: bool = False
    # Query parameters a view reads itself (no schema): (name, description) pairs.
    query: tuple[tuple[str, str], ...] = ()


class Blueprint(flask_smorest.Blueprint):
    ARGUMENTS_PARSER = Parser()

    def operation(self, operation_id: str, *, scope: str | None, idempotency=_BY_METHOD,
                  idempotency_required: bool = True, key_refused: str | None = None,
                  group: str = "native", errors: tuple[str, ...] = (),
                  register_of_record: bool = False, query: dict[str, str] | None = None):
        """Declare an operation: its `operationId` (a camelCase verb: generated clients name
        their functions by it), its scope (None for the public probes and card routes), its
        Idempotency-Key, its `x-group`, and the error codes its own rules answer with
        (`app.api.error_codes`; those every operation of its kind can answer, such as 401 or
        404 for a path id, are added by `app.api.document`).

        `idempotency=(low, high)`: the key's length range, required unless
        `idempotency_required=False`. By default a POST of a key holder (a create) honours an
        optional key of OPTIONAL_KEY's length (docs/api.md#idempotency), so a new create is idempotent
        without a word; `key_refused=why` where its answer cannot be stored and replayed (a
        secret shown once): a key sent is a 422.

        `query={name: description}`: parameters the view reads from the query itself (a
        protocol of someone else's); an operation with neither these nor a query schema
        refuses any query parameter with a 422."""

        def decorator(func):
            from app.web.idempotency import idempotent, refuse_key
            given = idempotency is not _BY_METHOD and idempotency is not None
            key_range, required = (idempotency, idempotency_required) if given else (None, False)
            if (idempotency is _BY_METHOD and func.__name__ == "post" and scope is not None
                    and key_refused is None):
                key_range = OPTIONAL_KEY
            if key_refused is not None:
                func = refuse_key(key_refused)(func)
            elif key_range is not None:
                func = idempotent(*key_range, required=required)(func)
            if not getattr(func, "query_schema", False):
                func = refuse_unknown_query(func, frozenset(query or ()))
            func.operation = Operation(operation_id=operation_id, scope=scope,
                                       idempotency=key_range, group=group, errors=tuple(errors),
                                       idempotency_required=required, key_refused=key_refused,
                                       query=tuple((query or {}).items()),
                                       register_of_record=register_of_record)
            return func

        return decorator

    def arguments(self, schema, *, location="json", required=True, **kwargs):
        parse = super().arguments(schema, location=location, required=required, **kwargs)
        if location == "query":
            def with_query_schema(func):
                parsed = parse(func)
                parsed.query_schema = True  # its schema refuses the parameters it does not know
                return parsed

            return with_query_schema
        if location != "json" or not required:
            return parse

        def decorator(func):
            parsed = parse(func)

            @wraps(parsed)
            def wrapper(*args, **kwargs):
                # An absent body is one clear error, not a list of every missing field.
                if not raw_body():
                    raise InvalidField(["body"], "a JSON body is required", "missing")
                return parsed(*args, **kwargs)

            return wrapper

        return decorator


def refuse_unknown_query(func, known: frozenset[str]):
    """`func`, answering a 422 for any query parameter but the `known` ones (those of a
    schema are refused by the schema, with its other errors)."""

    @wraps(func)
    def wrapper(*args, **kwargs):
        # The request itself: a read through the proxy costs (app/web/requests.py).
        unknown = [name for name in request._get_current_object().args if name not in known]
        if unknown:
            flask_smorest.abort(422, messages={"query": {name: ["Unknown field."]
                                                         for name in unknown}})
        return func(*args, **kwargs)

    return wrapper


class Api(flask_smorest.Api):
    # Our error body, {detail, code}: the interface document's errors (app.api.document
    # writes each operation's, and HTTPValidationError for every 422).
    ERROR_SCHEMA = ErrorResponse

    def handle_http_exception(self, error):
        from app.web.errors import http_error_response
        return http_error_response(error)


def json_response(body: dict, status: int) -> Response:
    """A body the service built as the interface shows it, serialised once (its response
    schema documents the same shape)."""
    return Response(compact_json(body),
                    status=status, mimetype="application/json")


def operations(app: Flask):
    """Every declared operation as (method, rule, Operation): the route table the tests walk."""
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            operation = declared_operation(app, rule.endpoint, method)
            if operation is not None:
                yield method, rule.rule, operation
