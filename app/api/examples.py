"""One example for every JSON body of the interface document, composed from the document's
own schemas: a field's `example` (money "150.00", a phone), else its default, else the first
value of its enum, else a value of its type and format. Composed rather than written by hand,
an example cannot drift from its schema; the tests load every request example with the
request's own schema."""
from __future__ import annotations

SAMPLES = {
    ("string", "date-time"): "2026-05-01T10:00:00Z",
    ("string", "date"): "1990-05-17",
    ("string", "email"): "anna@example.com",
    ("string", "url"): "https://pos.example.com/hooks/loyalty",
    ("string", None): "string",
    ("integer", None): 1,
    ("number", None): 55.75,
    ("boolean", None): True,
}
# By the field's name, where its type alone would say little.
NAMED = {"id": "6f1c2b9e-3d4a-4f5b-8c7d-9e0f1a2b3c4d", "url": "https://pos.example.com/hooks",
         "name": "Anna", "firstName": "Anna", "lastName": "Ivanova", "city": "Moscow",
         "address": "Tverskaya st. 1", "sku": "MILK-1L", "lineId": "1",
         "externalReceiptId": "R-2026-000123", "latitude": 55.7558, "longitude": 37.6173}


def example_of(schema: dict, schemas: dict, name: str = "") -> object:
    if "$ref" in schema:
        return example_of(schemas[schema["$ref"].rsplit("/", 1)[1]], schemas)
    for key in ("example", "default"):
        if schema.get(key) is not None:
            return schema[key]
    if schema.get("type") in ("string", "number") and "format" not in schema:
        named = NAMED.get(name, NAMED["id"] if name.endswith("Id") else None)
        if named is not None:
            return named
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            return example_of(schema[key][0], schemas)
    if schema.get("enum"):
        return schema["enum"][0]
    if "properties" in schema:
        return {field_name: example_of(field, schemas, field_name)
                for field_name, field in schema["properties"].items()}
    kind = schema.get("type", "object")
    if kind == "array":
        return [example_of(schema.get("items", {}), schemas)]
    if kind == "object":
        return {}
    return SAMPLES.get((kind, schema.get("format")), SAMPLES[(kind, None)])


def add_examples(operation: dict, schemas: dict) -> None:
    """An example beside every JSON body's schema that has none."""
    bodies = [operation.get("requestBody", {})] + list(operation.get("responses", {}).values())
    for body in bodies:
        if not isinstance(body, dict):  # a response component's name, its example its own
            continue
        media = body.get("content", {}).get("application/json")
        if media is not None and "example" not in media and "schema" in media:
            media["example"] = example_of(media["schema"], schemas)
