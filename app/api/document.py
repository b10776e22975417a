"""The interface document (docs/api.md#interface) written from the operations' declarations:
markers, security, headers, and every error an operation can answer with its `code` values.

Codes an operation can meet because of what it is come from here, once (a key → 401/403,
a path id → 404, a body → 400/413/415, an Idempotency-Key → 409, the database → 503); codes of
its own rules are declared with it (`@blp.operation(errors=…)`). Statuses and meanings come
from `app.api.error_codes`."""
from __future__ import annotations

import re

from apispec import BasePlugin
from flask import Flask

from app.api.base import (Api, CustomerExistsError, ErrorResponse, HTTPValidationError, Operation,
                          ReceiptCommittedError)
from app.api.error_codes import ERROR_CODES, status_of
from app.api.examples import add_examples
from app.api.validation_errors import validation_response
from app.web.auth import BODY_METHODS, POS_KEY_MAX_LENGTH
from app.web.views import declared_operation

_RULE_ARGUMENT = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
# A key's request is also counted against its rate (app.web.rate_limit).
AUTHENTICATED = ("missing_api_key", "invalid_api_key", "insufficient_scope", "terminal_inactive",
                 "rate_limited")
WITH_BODY = ("bad_request", "payload_too_large", "unsupported_media_type")
# An error body with more than {detail, code}, by the code that brings it, and its example.
ERROR_BODIES = {"customer_exists": CustomerExistsError,
                "receipt_already_committed": ReceiptCommittedError}
ERROR_EXTRAS = {"customer_exists": {"customerId": "6f1c2b9e-3d4a-4f5b-8c7d-9e0f1a2b3c4d"},
                "receipt_already_committed": {"saleId": "0d3c9f4e-58b1-4a27-9c6e-2f8a7b1d5e90"}}
POS_KEY_HEADER = {"in": "header", "name": "X-Loyalty-Pos-Key", "required": False,
                  "description": "The register making the request: the posKey of an ACTIVE "
                                 "terminal of the key's company (else a 403 terminal_inactive). "
                                 "Its requests are counted per register against the rate limit",
                  "schema": {"type": "string", "maxLength": POS_KEY_MAX_LENGTH}}
HEADERS = {
    "X-Request-Id": {"description": "The request's id, also in the logs: the request's own "
                     "X-Request-Id when it is 1-128 characters of A-Za-z0-9._:-, else generated",
                     "schema": {"type": "string", "maxLength": 128}},
    "Idempotent-Replayed": {"description": "`true` when this is the stored answer to an earlier "
                            "request with the same Idempotency-Key and body",
                            "schema": {"type": "string", "enum": ["true"]}},
    "Retry-After": {"description": "Seconds to wait before trying again",
                    "schema": {"type": "integer", "minimum": 1}},
    "WWW-Authenticate": {"description": "The Bearer challenge; for insufficient_scope it names "
                         "the scope needed", "schema": {"type": "string"}},
    "RateLimit-Policy": {"description": "The rates the request was counted against "
                         "(draft-ietf-httpapi-ratelimit-headers), one item each: "
                         '`"per-register"` (a request naming a register with '
                         'X-Loyalty-Pos-Key) or `"per-key"` (API_RATE_LIMIT), then '
                         '`"key-ceiling"` (the key over all its registers, '
                         'API_KEY_RATE_LIMIT); as `"<policy>";q=<requests>;w=<seconds>`',
                         "schema": {"type": "string"}},
    "RateLimit": {"description": "What is left of each rate of RateLimit-Policy, in the same "
                  'order: `"<policy>";r=<requests left>;t=<seconds until its window resets>`',
                  "schema": {"type": "string"}},
}
RATE_HEADERS = ("RateLimit", "RateLimit-Policy")
DEFAULT_ERROR = "Error"  # the response component of any error an operation does not list
HEADERS_BY_STATUS = {401: ("WWW-Authenticate",), 403: ("WWW-Authenticate",),
                     429: ("Retry-After", *RATE_HEADERS), 503: ("Retry-After",)}


PATH_PARAMETERS = {
    "customer_id": "The customer's id", "checkout_session_id": "The checkout session's id",
    "sale_id": "The sale's id", "terminal_id": "The terminal's (register's) id",
    "campaign_id": "The campaign's id", "challenge_id": "The OTP challenge's id",
    "credential_id": "The API key's id", "endpoint_id": "The webhook endpoint's id",
    "external_receipt_id": "The receipt's number in the register's own system",
    "code": "The gift card's code, as printed on it",
    "token": "The card's token, from the link the customer was given",
    "deviceLibraryIdentifier": "The device's id, as Apple Wallet gives it",
    "passTypeIdentifier": "The pass type (Apple's pass type identifier)",
    "serialNumber": "The pass's serial number",
}


def idempotency_key_description(operation: Operation) -> str:
    low, high = operation.idempotency
    needed = ("Required: " if operation.idempotency_required
              else "Optional (without it a retry is a new request): ")
    return (f"{needed}a key of {low}-{high} characters you choose for this request (a UUID "
            "will do). A retry with the same key and body gets the first answer again "
            "(with Idempotent-Replayed: true) and changes nothing; the same key with another "
            "body is a 422 idempotency_key_reused; while the first is still running, a 409 "
            "idempotency_key_in_use. Keys are remembered for 24 hours by default.")


def document_path(rule: str) -> str:
    """The document's path of a URL rule: `/v1/sales/<sale_id>` → `/v1/sales/{sale_id}`."""
    return _RULE_ARGUMENT.sub(r"{\1}", rule)


def error_codes(method: str, rule: str, operation) -> list[str]:
    """Every error code the operation can answer with, in the order of docs/api.md#errors's
    checks."""
    codes = []
    if operation.scope is not None:
        codes += AUTHENTICATED
        if method in BODY_METHODS:
            codes += WITH_BODY
    if "<" in rule:
        codes.append("not_found")
    if operation.idempotency:
        codes.append("idempotency_key_in_use")
    codes += operation.errors
    if operation.group == "native":  # the probes answer for the database themselves
        codes.append("database_unavailable")
    return sorted(dict.fromkeys(codes), key=lambda code: status_of(code))


def _header_refs(*names: str) -> dict:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


def _schema_ref(schema) -> dict:
    return {"$ref": f"#/components/schemas/{schema.__name__}"}


def error_response(status: int, codes: list[str], *, page: bool = False) -> dict:
    """`page`: a shopper's page (no key) answers a browser's 404 as an HTML page."""
    schema = next((ERROR_BODIES[c] for c in codes if c in ERROR_BODIES), ErrorResponse)
    listed = "\n".join(f"- `{code}`: {ERROR_CODES[code][1]}" for code in codes)
    first = codes[0]
    example = {"detail": ERROR_CODES[first][1], "code": first, **ERROR_EXTRAS.get(first, {})}
    return {"description": listed, "x-error-codes": codes,
            "headers": _header_refs("X-Request-Id", *HEADERS_BY_STATUS.get(status, ())),
            "content": {"application/json": {"schema": _schema_ref(schema), "example": example},
                        **({"text/html": {"schema": {"type": "string"}}} if page else {})}}


def _register_components(api: Api, app: Flask) -> None:
    components = api.spec.components
    for schema in (ErrorResponse, HTTPValidationError, CustomerExistsError, ReceiptCommittedError):
        if schema.__name__ not in components.schemas:
            components.schema(schema.__name__, schema=schema)
    for name, header in HEADERS.items():
        components.header(name, header)
    components.response(DEFAULT_ERROR, {
        "description": "Error", "headers": _header_refs("X-Request-Id"),
        "content": {"application/json": {"schema": _schema_ref(ErrorResponse)}}})
    components.security_scheme("bearerAuth", {
        "type": "http", "scheme": "bearer", "bearerFormat": "lk_live_… API key"})
    base_url = app.config["SETTINGS"].public_base_url
    api.spec.options["servers"] = [{"url": base_url, "description": "This service"}]
    api.spec.options["info"]["contact"] = {"name": "Loyalty API", "url": f"{base_url}/docs"}


def document_operations(api: Api, app: Flask) -> None:
    """The components the operations' documents refer to (each operation is written by
    OperationsPlugin as flask-smorest registers it)."""
    _register_components(api, app)
    # flask-smorest registers its X-Pagination header's schema with the header; our lists
    # page in the body (app.api.paging), so no operation refers to it.
    api.spec.components.schemas.pop("PaginationMetadata", None)


class OperationsPlugin(BasePlugin):
    """Writes each declared operation's id, markers, headers, security and errors into the
    interface document, from the same declarations that `app.web.auth` enforces: apispec's
    plugin hooks, called for every path flask-smorest registers, with its Flask rule."""

    def __init__(self, app: Flask):
        self.app = app
        self.spec = None
        self.path_parameters: list = []

    def init_spec(self, spec) -> None:
        super().init_spec(spec)
        self.spec = spec

    def path_helper(self, path=None, operations=None, parameters=None, **kwargs):
        # The path's own parameters (after flask-smorest's plugin added the rule's), which the
        # operations' declarations narrow.
        self.path_parameters = parameters if parameters is not None else []
        for parameter in self.path_parameters:
            if parameter.get("in") == "path":
                parameter.setdefault("description", PATH_PARAMETERS.get(
                    parameter["name"], f"The {parameter['name'].replace('_', ' ')}"))

    def operation_helper(self, path=None, operations=None, rule=None, **kwargs) -> None:
        if rule is None or not operations:
            return
        for method, doc in operations.items():
            operation = declared_operation(self.app, rule.endpoint, method)
            if operation is not None:
                document_operation(doc, method.upper(), rule.rule, operation,
                                   self.path_parameters, self.spec.components.schemas)


def document_operation(doc: dict, method: str, rule: str, operation: Operation,
                       path_parameters: list, schemas: dict) -> None:
    doc.update({"operationId": operation.operation_id, "x-group": operation.group,
                "x-readiness": "READY"})
    # Status codes as the document writes them, whichever way flask-smorest gave them.
    responses = doc["responses"] = {str(status): response
                                    for status, response in doc.get("responses", {}).items()}
    responses["default"] = DEFAULT_ERROR
    _document_success(responses, operation)
    codes = error_codes(method, rule, operation)
    shopper_page = operation.scope is None and operation.group == "native"
    for status in dict.fromkeys(status_of(code) for code in codes):
        responses[str(status)] = error_response(
            status, [code for code in codes if status_of(code) == status],
            page=shopper_page and status == 404)
    doc.setdefault("parameters", []).extend(
        {"in": "query", "name": name, "required": False, "description": description,
         "schema": {"type": "string"}} for name, description in operation.query)
    _narrow_path_parameters(path_parameters, doc)
    add_examples(doc, schemas)
    if operation.scope is not None:
        doc.update({"x-lifecycle": "active", "x-scope": operation.scope,
                    "security": [{"bearerAuth": []}]})
        parameters = doc.setdefault("parameters", [])
        parameters.append({**POS_KEY_HEADER, "required": True,
                           "description": "The register that made the sale, a terminal of the "
                                          "company in whatever state it is now"}
                          if operation.register_of_record else POS_KEY_HEADER)
        if operation.idempotency:
            low, high = operation.idempotency
            parameters.append({"in": "header", "name": "Idempotency-Key",
                               "required": operation.idempotency_required,
                               "description": idempotency_key_description(operation),
                               "schema": {"type": "string", "minLength": low,
                                          "maxLength": high}})
    # Every operation can answer a 422: a query parameter it does not have, if nothing else.
    responses["422"] = validation_response(
        doc, schemas, _schema_ref(HTTPValidationError), _header_refs("X-Request-Id"))


def _document_success(responses: dict, operation) -> None:
    for status, response in responses.items():
        if status.isdigit() and int(status) < 400:
            replayed = ("Idempotent-Replayed",) if operation.idempotency else ()
            counted = RATE_HEADERS if operation.scope is not None else ()
            response.setdefault("headers", {}).update(
                _header_refs("X-Request-Id", *replayed, *counted))


def _narrow_path_parameters(path_parameters: list, doc: dict) -> None:
    """flask-smorest documents each path argument of the rule at the path's level as a bare
    string; an operation's own declaration of it (a length, say) overrides that, but not in
    every generator, so the path level says the same."""
    own = {(p["in"], p["name"]): p for p in doc.get("parameters", []) if "$ref" not in p}
    for index, parameter in enumerate(path_parameters):
        declared = own.get((parameter["in"], parameter["name"]))
        if declared is not None:
            if "description" in parameter:
                declared.setdefault("description", parameter["description"])
            path_parameters[index] = declared
