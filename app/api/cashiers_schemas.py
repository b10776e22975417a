import marshmallow as ma

from app.api.base import ResponseSchema
from app.api.fields import Timestamp
from app.api.paging import PageArgs, page_schema


class CashierListArgs(PageArgs):
    query = ma.fields.String(validate=ma.validate.Length(max=100),
                             metadata={"description": "part of the name, any case"})


class CashierResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    externalId = ma.fields.String(attribute="external_id", required=True)
    name = ma.fields.String(required=True)
    createdAt = Timestamp(attribute="created_at", required=True)


CashierListResponse = page_schema(CashierResponse, "CashierListResponse")
