"""The two paging styles of the spec and their response envelopes (docs/api.md#conventions)."""
from __future__ import annotations

import marshmallow as ma

from app.api.base import ResponseSchema, Schema


class OffsetArgs(Schema):
    offset = ma.fields.Integer(load_default=0, validate=ma.validate.Range(0, 1_000_000))
    limit = ma.fields.Integer(load_default=20, validate=ma.validate.Range(1, 100))


class PageArgs(Schema):
    page = ma.fields.Integer(load_default=1, validate=ma.validate.Range(min=1))
    page_size = ma.fields.Integer(data_key="pageSize", load_default=50,
                                  validate=ma.validate.Range(1, 200))


def offset_page_schema(item_schema, name: str) -> type[ResponseSchema]:
    return ResponseSchema.from_dict({
        "items": ma.fields.List(ma.fields.Nested(item_schema), required=True),
        "offset": ma.fields.Integer(required=True),
        "limit": ma.fields.Integer(required=True),
        "total": ma.fields.Integer(required=True),
    }, name=name)


def page_schema(item_schema, name: str) -> type[ResponseSchema]:
    return ResponseSchema.from_dict({
        "items": ma.fields.List(ma.fields.Nested(item_schema), required=True),
        "page": ma.fields.Integer(required=True),
        "pageSize": ma.fields.Integer(required=True),
        "total": ma.fields.Integer(required=True),
    }, name=name)
