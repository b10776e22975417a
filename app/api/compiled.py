"""Request bodies loaded by functions built once from their schemas, for the register's
operations: what marshmallow's per-request walk of the schema gives for a body it accepts, in
a fraction of its time.

A compiled loader only ever says "this is the loaded body" or "ask the schema": whatever it is
unsure of (a field it does not know, an unknown or missing key, a value its field refuses, a
schema-level rule that fails) goes to the schema itself, which answers the 422 it always did.
So the loader decides nothing marshmallow would decide differently; the property test
`tests/checkout/test_checkout_compiled_bodies.py` holds the two equal on generated bodies.
"""
from __future__ import annotations

import marshmallow as ma
from marshmallow.decorators import VALIDATES_SCHEMA

from app.api.fields import Amount, Quantity

ASK_THE_SCHEMA = object()


class _Unsure(Exception):
    """The body is for the schema to judge."""


def compile_loader(schema: ma.Schema):
    """A function body → loaded dict (as `schema.load` gives it) or ASK_THE_SCHEMA; None
    when the schema has something this does not compile (then the schema loads every body)."""
    try:
        load = _schema(schema)
    except _Unsure:
        return None

    def loader(body):
        try:
            return load(body)
        except (_Unsure, ma.ValidationError):
            return ASK_THE_SCHEMA

    return loader


def _schema(schema: ma.Schema):
    hooks = schema._hooks
    if any(hooks[tag] for tag in hooks if tag != VALIDATES_SCHEMA) or schema.many \
            or schema.unknown != ma.RAISE or schema.only or schema.exclude or schema.partial \
            or any(many or options.get("pass_original")
                   for _, many, options in hooks[VALIDATES_SCHEMA]):
        raise _Unsure
    fields = [(field.data_key or name, field.attribute or name, field, _field(field))
              for name, field in schema.load_fields.items()]
    known = frozenset(key for key, _, _, _ in fields)
    # Each @validates_schema method raises ValidationError on a body it refuses.
    rules = [getattr(schema, name) for name, _, _ in hooks[VALIDATES_SCHEMA]]

    def load(body):
        if type(body) is not dict or not known.issuperset(body):
            raise _Unsure
        loaded = {}
        for key, name, field, value_of in fields:
            if key in body:
                value = body[key]
                if value is None:
                    if not field.allow_none:
                        raise _Unsure
                    loaded[name] = None
                else:
                    loaded[name] = value_of(value)
            elif field.required:
                raise _Unsure
            elif field.load_default is not ma.missing:
                loaded[name] = field.load_default
        for rule in rules:
            rule(loaded, partial=None, many=False, unknown=None)
        return loaded

    return load


def _field(field: ma.fields.Field):
    """The value's loader: its field's own deserialisation, then its validators."""
    if callable(field.load_default):
        raise _Unsure
    validators = list(field.validators)
    if type(field) is ma.fields.String:
        def convert(value):
            if type(value) is not str:
                raise _Unsure
            return value
    elif type(field) in (Amount, Quantity):
        deserialize = field._deserialize

        def convert(value):
            return deserialize(value, None, None)
    elif type(field) is ma.fields.Nested and field.unknown is None:
        convert = _schema(field.schema)
    elif type(field) is ma.fields.List and type(field.inner) is ma.fields.Nested \
            and field.inner.unknown is None:
        item = _schema(field.inner.schema)

        def convert(value):
            if type(value) is not list:
                raise _Unsure
            return [item(element) for element in value]
    else:
        raise _Unsure
    if not validators:
        return convert

    def checked(value):
        value = convert(value)
        for validate in validators:
            if validate(value) is False:
                raise _Unsure
        return value

    return checked
