"""The 422 of the interface document: HTTPValidationError, the `type` values its items can
carry, and an example about the operation's own request."""
from __future__ import annotations

# Every `type` a 422's item can carry, and when.
VALIDATION_TYPES = {
    "missing": "a required field, parameter, header or body is absent",
    "null": "null where a value is required",
    "unknown_field": "a body field or query parameter the operation does not have",
    "value_error": "a value the field does not accept (format, range, choice, rule)",
    "string_length": "a string shorter or longer than the field allows",
    "string_too_long": "a header longer than allowed",
    "string_nul": "a string containing the NUL character",
    "string_unicode": "a string with a lone UTF-16 surrogate",
    "value_too_large": "a number beyond what the field can hold",
    "too_long": "a list with more items than allowed",
    "duplicate_sku": "the same SKU twice in a catalog",
    "empty_snapshot": "a catalog with no items",
    "url_not_allowed": "a webhook URL whose host is not allowed",
    "json_invalid": "a body that is not valid JSON",
    "json_too_deep": "a body nesting deeper than 100 levels",
    "json_number_too_long": "a number in the body with too many digits",
    "otp_invalid": "a wrong one-time code (the item's `ctx.attemptsLeft` says how many tries are left)",
    "idempotency_key_reused": "an Idempotency-Key already used with another request body",
    "idempotency_key_not_supported": "an Idempotency-Key sent where the answer is shown once "
                                     "and cannot be replayed",
}


def validation_response(doc: dict, schemas: dict, schema_ref: dict, headers: dict) -> dict:
    listed = "\n".join(f"- `{name}`: {meaning}" for name, meaning in VALIDATION_TYPES.items())
    return {"description": "Validation error (HTTPValidationError): each item names where "
                           "(`loc`), what (`msg`) and its `type`, one of:\n" + listed,
            "headers": headers,
            "x-validation-types": list(VALIDATION_TYPES),
            "content": {"application/json": {"schema": schema_ref,
                                              "example": {"detail": [example_item(doc, schemas)]}}}}


def example_item(doc: dict, schemas: dict) -> dict:
    """An item about this operation's own request: its body's first required field, else its
    first query parameter, else a query parameter it does not have."""
    body = doc.get("requestBody", {}).get("content", {}).get("application/json", {})
    reference = body.get("schema", {}).get("$ref", "")
    body_schema = schemas.get(reference.rsplit("/", 1)[-1], {}) if reference else {}
    required = body_schema.get("required") or sorted(body_schema.get("properties", {}))
    if required:
        return {"loc": ["body", required[0]], "msg": "Missing data for required field.",
                "type": "missing"}
    query = [p["name"] for p in doc.get("parameters", []) if p.get("in") == "query"]
    if query:
        return {"loc": ["query", query[0]], "msg": "Not a valid integer.", "type": "value_error"}
    return {"loc": ["query", "pageSize"], "msg": "Unknown field.", "type": "unknown_field"}
