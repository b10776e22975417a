"""The interface document as a client generator reads it: ids, errors with their codes, named
enums, open responses, headers, servers, examples. Each test walks the whole document, so a
new operation or schema is held to the same rules without being named here."""
from __future__ import annotations

import re

import marshmallow as ma
import pytest
import schemathesis
from schemathesis.specs.openapi.checks import (response_schema_conformance,
                                               status_code_conformance)

from app.api.base import Blueprint, operations
from app.api.document import AUTHENTICATED, document_path, error_codes
from app.api.enums import null_member
from app.api.error_codes import ERROR_CODES

METHODS = ("get", "post", "put", "patch", "delete")
CAMEL_VERB = re.compile(r"^[a-z]+[A-Z][A-Za-z]*$")


@pytest.fixture(scope="module")
def document(app):
    return app.test_client().get("/openapi.json").get_json()


def each_operation(document):
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def values_of(node, key: str):
    """Every value of `key` anywhere in a part of the document."""
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key:
                yield value
            else:
                yield from values_of(value, key)
    elif isinstance(node, list):
        for value in node:
            yield from values_of(value, key)


def referenced(node) -> set[str]:
    """The component schemas a part of the document names in its $refs."""
    return {ref.rsplit("/", 1)[1] for ref in values_of(node, "$ref")
            if ref.startswith("#/components/schemas/")}


def reachable(document, roots: set[str]) -> set[str]:
    schemas, seen, todo = document["components"]["schemas"], set(), set(roots)
    while todo:
        name = todo.pop()
        seen.add(name)
        todo |= referenced(schemas[name]) - seen
    return seen


def test_every_operation_has_its_own_camel_case_operation_id(app, document):
    ids = [op.get("operationId") for _, _, op in each_operation(document)]
    assert None not in ids
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert all(CAMEL_VERB.match(i) for i in ids), ids
    declared = {operation.operation_id for _, _, operation in operations(app)}
    assert set(ids) == declared


def test_an_operation_without_an_id_cannot_be_declared():
    with pytest.raises(TypeError):
        Blueprint("probe", __name__).operation(scope="company:read")


def test_every_error_an_operation_can_answer_is_documented_with_its_codes(app, document):
    for method, rule, operation in operations(app):
        path = document_path(rule)
        responses = document["paths"][path][method.lower()]["responses"]
        codes = error_codes(method, rule, operation)
        listed = {status: r["x-error-codes"] for status, r in responses.items()
                  if "x-error-codes" in r}
        assert sorted(c for group in listed.values() for c in group) == sorted(codes), path
        for status, group in listed.items():
            assert {ERROR_CODES[code][0] for code in group} == {int(status)}
            for code in group:
                assert f"`{code}`" in responses[status]["description"]
        if operation.scope is not None:
            assert set(AUTHENTICATED) <= set(codes)
            assert {"401", "403", "422"} <= set(responses), (method, path)
        if "{" in path:
            assert "not_found" in listed["404"], (method, path)
        if method in ("POST", "PATCH", "PUT") and operation.scope is not None:
            assert {"413", "415"} <= set(responses), (method, path)
        if operation.group == "native":
            assert "database_unavailable" in listed["503"]
            assert "Retry-After" in responses["503"]["headers"]


def test_the_register_operations_list_the_conflicts_of_their_rules(document):
    def codes(path, method, status):
        return document["paths"][path][method]["responses"][status]["x-error-codes"]

    session = "/v1/checkout-sessions/{checkout_session_id}"
    assert {"hold_already_active", "insufficient_balance"} <= set(codes(f"{session}/hold", "post", "409"))
    assert codes(f"{session}/hold", "post", "403")[-1] == "subscription_inactive"
    assert "receipt_already_committed" in codes(f"{session}/commit", "post", "409")
    assert "return_exceeds_sale" in codes("/v1/sales/{sale_id}/returns", "post", "409")
    assert "customer_exists" in codes("/v1/customers", "post", "409")
    assert "rate_limited" in codes("/v1/gift-cards/{code}", "get", "429")


def test_enums_are_named_schemas_without_null(document):
    schemas = document["components"]["schemas"]
    enums = {name for name, schema in schemas.items() if "enum" in schema}
    assert {"ActivityType", "ActivityStatus", "SubscriptionStatus", "ClawbackPolicy", "Currency",
            "SaleState", "HoldState", "CheckoutSessionState", "TerminalState"} <= enums
    for name in enums:
        assert None not in schemas[name]["enum"], name

    def inline_enums(node, where):
        if isinstance(node, dict):
            if "enum" in node and node != null_member():
                yield where
            for key, value in node.items():
                yield from inline_enums(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from inline_enums(value, f"{where}/{index}")

    # An enum anywhere else in a body makes a class of its own per field in a generated client.
    body_schemas = {name: s for name, s in schemas.items() if name not in enums}
    assert list(inline_enums(body_schemas, "schemas")) == []
    restriction = schemas["QuoteRedemption"]["properties"]["restrictionReason"]
    assert restriction["anyOf"] == [{"$ref": "#/components/schemas/RedemptionRestriction"},
                                    null_member()]
    assert set(restriction) == {"anyOf", "description"}


def test_every_field_of_a_body_has_a_type(document):
    for name, schema in document["components"]["schemas"].items():
        for field, value in schema.get("properties", {}).items():
            assert {"type", "$ref", "allOf", "anyOf"} & set(value), f"{name}.{field}"
            items = value.get("items")
            assert items is None or {"type", "$ref", "anyOf"} & set(items), f"{name}.{field}"
    currency = document["components"]["schemas"]["ProgramResponse"]["properties"]["currency"]
    assert currency["allOf"] == [{"$ref": "#/components/schemas/Currency"}]
    assert set(currency) == {"allOf", "description"}  # nothing beside a $ref: read as allOf


def test_responses_are_open_to_added_fields_and_requests_are_not(document):
    requests, responses = set(), set()
    for _, _, operation in each_operation(document):
        requests |= referenced(operation.get("requestBody", {}))
        responses |= referenced(operation["responses"])
    requests, responses = reachable(document, requests), reachable(document, responses)
    schemas = document["components"]["schemas"]
    objects = {n for n in requests | responses if schemas[n].get("type") == "object"}
    assert requests and responses and not requests & responses & objects
    assert [n for n in responses if schemas[n].get("additionalProperties") is False] == []
    closed = [n for n in requests & objects if schemas[n].get("additionalProperties") is False]
    assert sorted(closed) == sorted(requests & objects)


def test_the_409_of_an_enrolment_is_valid_against_the_document(app, tenant):
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    enrol = schema["/v1/customers"]["POST"]
    body = {"phone": "+79123456789", "firstName": "Anna"}
    headers = {"Authorization": f"Bearer {tenant.key}"}
    assert enrol.Case(body=body).call(headers=headers).status_code == 201
    case = enrol.Case(body=body)
    response = case.call(headers=headers)
    assert response.status_code == 409 and "customerId" in response.json()
    case.validate_response(response, checks=[status_code_conformance,
                                             response_schema_conformance])


def test_headers_servers_and_the_bearer_format_are_documented(document):
    components = document["components"]
    assert {"X-Request-Id", "Idempotent-Replayed", "Retry-After"} <= set(components["headers"])
    assert components["securitySchemes"]["bearerAuth"]["bearerFormat"]
    assert document["servers"][0]["url"].startswith("http")
    for path, method, operation in each_operation(document):
        idempotent = any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
        for status, response in operation["responses"].items():
            if status == "default":
                continue
            headers = response.get("headers", {})
            assert "X-Request-Id" in headers, (method, path, status)
            if int(status) < 400:
                assert ("Idempotent-Replayed" in headers) == idempotent, (method, path)
            if status in ("429", "503"):
                assert "Retry-After" in headers, (method, path, status)


def test_every_json_body_has_an_example_its_schema_loads(app, document):
    """Requests load as the operation would load them; answers load with their schema (what
    only a dump writes left out)."""
    schemas = {name: key[0] for key, name in
               app.extensions["api"].ma_plugin.converter.refs.items()}
    for path, method, operation in each_operation(document):
        bodies = [operation.get("requestBody", {}).get("content", {}).get("application/json")]
        bodies += [r.get("content", {}).get("application/json")
                   for r in operation["responses"].values() if "$ref" not in r]
        for body in filter(None, bodies):
            assert "example" in body, (method, path)
            if "$ref" not in body["schema"]:  # a shape of Apple's (the Wallet web service)
                inline = body["schema"]
                assert set(inline.get("required", [])) <= set(body["example"]) <= set(
                    inline["properties"]), (method, path)
                continue
            schema = schemas[body["schema"]["$ref"].rsplit("/", 1)[1]]()
            written_by_dump = {f.data_key or n for n, f in schema.fields.items() if f.dump_only}
            example = {k: v for k, v in body["example"].items() if k not in written_by_dump}
            try:
                schema.load(example, unknown=ma.RAISE)
            except ma.ValidationError as error:
                pytest.fail(f"{method} {path}: {type(schema).__name__} {error.messages}")


def test_the_receipt_id_of_the_sale_lookup_is_1_to_128_characters(document):
    item = document["paths"]["/v1/sales/by-external-receipt/{external_receipt_id}"]
    parameters = item.get("parameters", []) + item["get"].get("parameters", [])
    receipt = [p for p in parameters if p["name"] == "external_receipt_id"]
    assert [p["schema"] for p in receipt] == 2 * [{"type": "string", "minLength": 1,
                                                   "maxLength": 128}]
