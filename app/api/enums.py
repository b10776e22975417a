"""Fixed sets of values as named enum schemas of the interface document.

A `Choice` field is documented as a `$ref` to one component schema named for its set, so a
generated client makes one enum class of it wherever it appears. A nullable one is
`anyOf: [$ref, null_member()]`: `null` never enters the enum's values (with `null` inside,
each field became an enum class of its own)."""
from __future__ import annotations

import marshmallow as ma

# Kept beside a $ref: only what describes the field, not the value set.
_FIELD_KEYWORDS = ("description", "readOnly", "writeOnly", "example")


def null_member() -> dict:
    """The `anyOf` member of a nullable reference: OpenAPI 3.0 has no null type and reads
    `nullable` only beside a `type` (`allOf: [$ref]` with `nullable: true` beside it is invalid
    to a validator such as Spectral's); this admits null and nothing else, and generators make
    it `None` / `null` beside the referenced class."""
    return {"type": "string", "nullable": True, "enum": [None]}


class Choice(ma.fields.String):
    def __init__(self, enum_name: str, values, **kwargs):
        self.enum_name, self.values = enum_name, tuple(values)
        super().__init__(validate=ma.validate.OneOf(self.values), **kwargs)


def named_enum(converter, field, ret: dict, **kwargs) -> dict:
    """apispec attribute function: a Choice becomes a reference to its named enum schema."""
    if not isinstance(field, Choice):
        return {}
    schemas = converter.spec.components.schemas
    known = schemas.get(field.enum_name)
    if known is None:
        converter.spec.components.schema(field.enum_name,
                                         {"type": "string", "enum": list(field.values)})
    elif known["enum"] != list(field.values):
        raise ValueError(f"two value sets are named {field.enum_name}")
    kept = {key: ret[key] for key in _FIELD_KEYWORDS if key in ret}
    ret.clear()  # the type, enum, default and nullable the built-in functions wrote
    reference = {"$ref": f"#/components/schemas/{field.enum_name}"}
    if not field.allow_none and not kept:
        return reference
    if field.allow_none:
        return {"anyOf": [reference, null_member()], **kept}
    return {"allOf": [reference], **kept}


def register_named_enums(api) -> None:
    api.ma_plugin.converter.add_attribute_function(named_enum)
    api.ma_plugin.converter.add_attribute_function(nullable_reference)


def list_of(enum_name: str) -> dict:
    """The document of a computed field (`fields.Function`) that answers a list of a set."""
    return {"type": "array", "items": {"$ref": f"#/components/schemas/{enum_name}"}}


def nullable_reference(converter, field, ret: dict, **kwargs) -> dict:
    """apispec attribute function: apispec writes a nullable nested schema as `anyOf` with a
    bare nullable object, which generators turn into a class of its own; `null_member()` in its
    place admits null alone."""
    choices = ret.get("anyOf", [])
    references = [choice for choice in choices if "$ref" in choice]
    if len(choices) != 2 or len(references) != 1 or {"type": "object", "nullable": True} not in choices:
        return {}
    del ret["anyOf"]
    ret.pop("default", None)  # a default of null says nothing a nullable field does not
    return {"anyOf": [*references, null_member()]}
