import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.enums import Choice
from app.api.fields import Pattern, Text, no_nul
from app.api.fields import Timestamp
from app.api.paging import PageArgs, page_schema
from app.services.locations.stores import TERMINAL_STATES

# A posKey travels in the X-Loyalty-Pos-Key header: visible ASCII, inner spaces allowed,
# none at either end (HTTP would strip them and the key could never match).
POS_KEY = Pattern(r"^[!-~](?:[ -~]*[!-~])?$",
                  error="must be visible ASCII characters, no space at either end")


class CreateTerminalRequest(Schema):
    storeId = ma.fields.String(required=True, validate=no_nul)
    name = Text(maximum=200, required=True)
    posKey = ma.fields.String(load_default=None, allow_none=True,
                              validate=[ma.validate.Length(max=128), POS_KEY])


class UpdateTerminalRequest(Schema):
    name = Text(maximum=200)
    state = Choice("TerminalState", TERMINAL_STATES)
    storeId = ma.fields.String(validate=no_nul)

    @ma.validates_schema
    def _at_least_one(self, data, **kwargs):
        if not data:
            raise ma.ValidationError("give at least one of name, state, storeId")


class TerminalListArgs(PageArgs):
    storeId = ma.fields.String(metadata={"description": "only the terminals of this store"})


class TerminalResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    storeId = ma.fields.String(attribute="store_id", required=True)
    name = ma.fields.String(required=True)
    state = Choice("TerminalState", TERMINAL_STATES, required=True)
    posKey = ma.fields.String(attribute="pos_key", allow_none=True)
    createdAt = Timestamp(attribute="created_at", required=True)
    updatedAt = Timestamp(attribute="updated_at", required=True)


TerminalListResponse = page_schema(TerminalResponse, "TerminalListResponse")
