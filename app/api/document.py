"""The interface document (docs/api.md#interface) written from the operations' declarations:
markers, security, headers, and every error an operation can answer with its `code` values.

Codes an operation can meet because of what it is come from here, once (a key → 401/403,
a path id → 404, a body → 400/413/415, an Idempotency-Key → 409, the database → 503); codes of
its own rules are declared with it (`@blp.operation(errors=…)`). Statuses and meanings come
from `app.api.error_codes`."""
from __future__ import annotations

import json
import re

from flask import Flask

from app.api.base import (Api, CustomerExistsError, ErrorResponse, HTTPValidationError,
                          ReceiptCommittedError, operations)
from app.api.error_codes import ERROR_CODES, status_of
from app.api.examples import add_examples
from app.web.auth import BODY_METHODS, POS_KEY_MAX_LENGTH

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
                  "description": "The register's terminal (its posKey)",
                  "schema": {"type": "string", "maxLength": POS_KEY_MAX_LENGTH}}
HEADERS = {
    "X-Request-Id": {"description": "The request's id, also in the logs: the request's own "
                     "X-Request-Id when it is 1-128 characters of A-Za-z0-9._:-, else generated",
                     "schema": {"type": "string", "maxLength": 128}},
    "Idempotent-Replayed": {"description": "`true` when this is the stored answer to an earlier "
                            "request with the same Idempotency-Key (docs/api.md#idempotency)",
                            "schema": {"type": "string", "enum": ["true"]}},
    "Retry-After": {"description": "Seconds to wait before trying again",
                    "schema": {"type": "integer", "minimum": 1}},
    "WWW-Authenticate": {"description": "The Bearer challenge; for insufficient_scope it names "
                         "the scope needed", "schema": {"type": "string"}},
    "RateLimit-Policy": {"description": "The key's rate (draft-ietf-httpapi-ratelimit-headers): "
                         '`"per-key";q=<requests>;w=<seconds>`', "schema": {"type": "string"}},
    "RateLimit": {"description": "What the key has left of its rate: "
                  '`"per-key";r=<requests left>;t=<seconds until the window resets>`',
                  "schema": {"type": "string"}},
}
RATE_HEADERS = ("RateLimit", "RateLimit-Policy")
HEADERS_BY_STATUS = {401: ("WWW-Authenticate",), 403: ("WWW-Authenticate",),
                     429: ("Retry-After", *RATE_HEADERS), 503: ("Retry-After",)}


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


def validation_response() -> dict:
    example = {"detail": [{"loc": ["body", "phone"], "msg": "not a Russian phone number",
                           "type": "value_error"}]}
    return {"description": "Validation error (HTTPValidationError)",
            "headers": _header_refs("X-Request-Id"),
            "content": {"application/json": {"schema": _schema_ref(HTTPValidationError),
                                              "example": example}}}


def _register_components(api: Api, app: Flask) -> None:
    components = api.spec.components
    for schema in (HTTPValidationError, CustomerExistsError, ReceiptCommittedError):
        if schema.__name__ not in components.schemas:
            components.schema(schema.__name__, schema=schema)
    for name, header in HEADERS.items():
        components.header(name, header)
    components.security_scheme("bearerAuth", {
        "type": "http", "scheme": "bearer", "bearerFormat": "lk_live_… API key"})
    base_url = app.config["SETTINGS"].public_base_url
    api.spec.options["servers"] = [{"url": base_url, "description": "This service"}]
    api.spec.options["info"]["contact"] = {"name": "Loyalty API", "url": f"{base_url}/docs"}


def document_operations(api: Api, app: Flask) -> None:
    """Write each declared operation's id, markers, headers, security and errors into the
    interface document, from the same declarations that `app.web.auth` enforces."""
    _register_components(api, app)
    paths = api.spec._paths  # apispec keeps no public way to amend a registered path
    for method, rule, operation in operations(app):
        path = paths.get(document_path(rule), {})
        doc = path.get(method.lower())
        if doc is None:
            continue
        doc.update({"operationId": operation.operation_id, "x-group": operation.group,
                    "x-readiness": "READY"})
        responses = doc.setdefault("responses", {})
        _document_success(responses, operation)
        codes = error_codes(method, rule, operation)
        shopper_page = operation.scope is None and operation.group == "native"
        for status in dict.fromkeys(status_of(code) for code in codes):
            responses[str(status)] = error_response(
                status, [code for code in codes if status_of(code) == status],
                page=shopper_page and status == 404)
        _narrow_path_parameters(path, doc)
        add_examples(doc, api.spec.components.schemas)
        if operation.scope is None:
            continue
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
                               "schema": {"type": "string", "minLength": low, "maxLength": high}})
        responses["422"] = validation_response()
    _drop_unused_responses(api)


def _drop_unused_responses(api: Api) -> None:
    """flask-smorest refers each 422 to its own response component, which the loop above
    replaces with ours: a component left unreferenced is noise to a linter and a generator."""
    written = json.dumps(api.spec._paths)
    responses = api.spec.components.responses
    for name in [n for n in responses if f'"#/components/responses/{n}"' not in written]:
        del responses[name]


def _document_success(responses: dict, operation) -> None:
    for status, response in responses.items():
        if status.isdigit() and int(status) < 400:
            replayed = ("Idempotent-Replayed",) if operation.idempotency else ()
            counted = RATE_HEADERS if operation.scope is not None else ()
            response.setdefault("headers", {}).update(
                _header_refs("X-Request-Id", *replayed, *counted))


def _narrow_path_parameters(path: dict, doc: dict) -> None:
    """flask-smorest documents each path argument of the rule at the path's level as a bare
    string; an operation's own declaration of it (a length, say) overrides that, but not in
    every generator, so the path level says the same."""
    own = {(p["in"], p["name"]): p for p in doc.get("parameters", []) if "$ref" not in p}
    for index, parameter in enumerate(path.get("parameters", [])):
        declared = own.get((parameter["in"], parameter["name"]))
        if declared is not None:
            path["parameters"][index] = declared
