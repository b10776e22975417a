import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.fields import JsonBoolean, Percent, Text, Timestamp, no_nul
from app.api.paging import PageArgs, page_schema

MOST_SKUS, MOST_CATEGORIES, MOST_STORES = 1000, 100, 1000
# A campaign shows up to ~130 KB (1,000 skus, 100 categories, 1,000 stores in full), and ended
# campaigns are not capped in number: 50 a page keeps a page within a few megabytes.
MOST_A_PAGE = 50


def _strings(maximum_length: int, most: int, description: str) -> ma.fields.List:
    return ma.fields.List(
        ma.fields.String(validate=[ma.validate.Length(1, maximum_length), no_nul]),
        load_default=list, validate=ma.validate.Length(max=most),
        metadata={"description": description})


class CampaignListArgs(PageArgs):
    page_size = ma.fields.Integer(data_key="pageSize", load_default=20,
                                  validate=ma.validate.Range(1, MOST_A_PAGE))


class CreateCampaignRequest(Schema):
    name = Text(maximum=100, required=True)
    startsAt = Timestamp(required=True, metadata={"example": "2026-05-01T00:00:00Z"})
    endsAt = Timestamp(required=True, metadata={"description": "Later than startsAt",
                                                 "example": "2026-05-08T00:00:00Z"})
    accrualPercent = Percent(required=True)
    skus = _strings(64, MOST_SKUS, "Lines with these skus (with categories: either)")
    categories = _strings(255, MOST_CATEGORIES, "Lines whose catalog item (same store) is in these")
    storeIds = _strings(36, MOST_STORES, "Only at these stores of the company (empty: every store)")

    @ma.validates_schema
    def _ends_after_start(self, data, **_kwargs):
        if "startsAt" in data and "endsAt" in data and data["endsAt"] <= data["startsAt"]:
            raise ma.ValidationError("must be later than startsAt", "endsAt")


class UpdateCampaignRequest(Schema):
    name = Text(maximum=100)
    endsAt = Timestamp(metadata={"description": "Later than the campaign's startsAt"})
    active = JsonBoolean()

    @ma.validates_schema
    def _at_least_one(self, data, **_kwargs):
        if not data:
            raise ma.ValidationError("give at least one of name, endsAt, active")


class CampaignResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    startsAt = Timestamp(required=True)
    endsAt = Timestamp(required=True)
    accrualPercent = Percent(required=True)
    skus = ma.fields.List(ma.fields.String(), required=True)
    categories = ma.fields.List(ma.fields.String(), required=True)
    storeIds = ma.fields.List(ma.fields.String(), required=True)
    active = ma.fields.Boolean(required=True)
    createdAt = Timestamp(required=True)


CampaignListResponse = page_schema(CampaignResponse, "CampaignListResponse")
