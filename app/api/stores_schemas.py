import zoneinfo

import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.enums import Choice, list_of
from app.api.fields import Text
from app.api.fields import Timestamp
from app.api.paging import page_schema
from app.services.locations.stores import CHANNELS, store_channels

TIMEZONES = frozenset(zoneinfo.available_timezones())


class Coordinate(ma.fields.Float):
    """A JSON number only: "55.75" or true is a 422, not silently converted."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


def _known_timezone(name: str) -> None:
    if name not in TIMEZONES:
        raise ma.ValidationError("must be an IANA time zone name such as Europe/Moscow")


class CreateStoreRequest(Schema):
    name = Text(maximum=200, required=True)
    address = Text(maximum=500, required=True)
    city = Text(maximum=120, required=True)
    latitude = Coordinate(required=True, validate=ma.validate.Range(-90, 90))
    longitude = Coordinate(required=True, validate=ma.validate.Range(-180, 180))
    channels = ma.fields.List(Choice("StoreChannel", CHANNELS),
                              load_default=list)
    timezone = ma.fields.String(load_default="Europe/Moscow", validate=_known_timezone)


class PlaceDirectoryStore(ResponseSchema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    address = ma.fields.String(required=True)
    latitude = ma.fields.Float(required=True)
    longitude = ma.fields.Float(required=True)


class StoreResponse(PlaceDirectoryStore):
    city = ma.fields.String(required=True)
    channels = ma.fields.Function(store_channels, required=True, metadata=list_of("StoreChannel"))
    timezone = ma.fields.String(required=True)
    active = ma.fields.Boolean(required=True)
    createdAt = Timestamp(attribute="created_at", required=True)


StoreListResponse = page_schema(StoreResponse, "StoreListResponse")


class PlaceDirectoryCity(ResponseSchema):
    name = ma.fields.String(required=True)
    stores = ma.fields.List(ma.fields.Nested(PlaceDirectoryStore), required=True)


class PlaceDirectoryResponse(ResponseSchema):
    cities = ma.fields.List(ma.fields.Nested(PlaceDirectoryCity), required=True)
