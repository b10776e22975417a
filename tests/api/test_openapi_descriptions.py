"""The interface document says what everything in it is: every operation, parameter, header
and schema property has a description; every 422 lists the `type` values its items can carry,
among them every type the code answers with; examples read like a real shop's."""
from __future__ import annotations

import ast
import json
import pathlib
import re

from app.api.validation_errors import VALIDATION_TYPES
from app.web.errors import MESSAGE_TYPES
from tests.api.test_openapi_for_clients import document  # noqa: F401 - the fixture

ROOT = pathlib.Path(__file__).resolve().parents[2]


def operations(document):
    """(path, method, path item) of every operation: path-level parameters are the item's."""
    for path, item in document["paths"].items():
        for method in ("get", "post", "put", "patch", "delete"):
            if method in item:
                yield path, method, item


def test_every_operation_and_parameter_is_described(document):
    undescribed = []
    for path, method, item in operations(document):
        operation = item[method]
        if not operation.get("description"):
            undescribed.append(f"{method} {path}")
        for parameter in item.get("parameters", []) + operation.get("parameters", []):
            if "$ref" not in parameter and not parameter.get("description"):
                undescribed.append(f"{method} {path} {parameter['in']} {parameter['name']}")
    assert undescribed == []


def test_every_schema_property_and_header_is_described(document):
    components = document["components"]
    undescribed = [f"{name}.{field}" for name, schema in components["schemas"].items()
                   for field, value in schema.get("properties", {}).items()
                   if not value.get("description")]
    undescribed += [f"header {name}" for name, header in components["headers"].items()
                    if not header.get("description")]
    assert undescribed == []


def test_idempotency_keys_say_their_length_as_the_schema_does(document):
    seen = set()
    for path, method, item in operations(document):
        for parameter in item[method].get("parameters", []):
            if parameter["name"] == "Idempotency-Key":
                low, high = parameter["schema"]["minLength"], parameter["schema"]["maxLength"]
                assert f"{low}-{high} characters" in parameter["description"], (method, path)
                seen.add((item[method]["operationId"], low, high))
    assert ("commitSale", 8, 100) in seen and ("createStore", 1, 128) in seen


def raised_types() -> set[str]:
    """Every 422 `type` written in app/: InvalidField's third argument, and the items the
    views build themselves."""
    types = set(MESSAGE_TYPES.values()) | {"value_error"}
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "InvalidField"
                    and len(node.args) > 2 and isinstance(node.args[2], ast.Constant)):
                types.add(node.args[2].value)
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (isinstance(key, ast.Constant) and key.value == "type"
                            and isinstance(value, ast.Constant)
                            and re.fullmatch(r"[a-z]+(_[a-z]+)+", str(value.value))):
                        types.add(value.value)
    return types


def test_every_422_lists_every_type_the_code_answers_with(document):
    assert raised_types() <= set(VALIDATION_TYPES)
    for path, method, item in operations(document):
        # Any operation refuses a query parameter it does not have.
        response = item[method]["responses"]["422"]
        assert response["x-validation-types"] == list(VALIDATION_TYPES)
        for name in VALIDATION_TYPES:
            assert f"`{name}`" in response["description"], (method, path, name)


def example(operation: dict, status: str) -> dict:
    body = operation["responses"][status] if status != "request" else operation["requestBody"]
    return body["content"]["application/json"]["example"]


def by_id(document) -> dict:
    return {item[method]["operationId"]: item[method] for _, method, item in operations(document)}


def test_a_422_example_is_about_the_operations_own_request(document):
    commit = example(by_id(document)["commitSale"], "422")
    assert commit["detail"][0]["loc"] == ["body", "quoteId"]
    enrol = example(by_id(document)["createCustomer"], "422")
    assert enrol["detail"][0]["loc"][0] == "body"


def test_examples_read_like_a_coffee_shops(document):
    operations_by_id = by_id(document)
    sale = example(operations_by_id["commitSale"], "201")
    session = example(operations_by_id["createCheckoutSession"], "request")
    ids = [sale["id"], sale["customerId"], sale["checkoutSessionId"], session["storeId"],
           session["terminalId"]]
    assert len(set(ids)) == len(ids)  # a sale, a customer, a session, a store, a register
    assert session["externalReceiptId"] == sale["externalReceiptId"] == "R-2026-000123"
    store = example(operations_by_id["createStore"], "request")
    catalog = example(operations_by_id["syncCatalog"], "request")
    line = example(operations_by_id["quoteReceipt"], "request")["lines"][0]
    assert store["name"] != catalog["items"][0]["name"] == line["name"]
    assert example(operations_by_id["createTerminal"], "request")["posKey"] != "string"
    written = json.dumps(document)
    assert '"string"' not in re.sub(r'"type": "string"', "", written)
