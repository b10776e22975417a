import re

import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.fields import MAX_AMOUNT, Amount, JsonBoolean, Timestamp, no_nul
from app.services.locations.catalog import MAX_ITEMS, CatalogEntry

ERRORS_REPORTED = 100  # invalid items described in one 422; the rest of the snapshot is not read


class CatalogSyncItem(Schema):
    sku = ma.fields.String(required=True, validate=[ma.validate.Length(1, 64), no_nul])
    name = ma.fields.String(required=True, validate=[ma.validate.Length(1, 255), no_nul])
    price = Amount(required=True, minimum=0, maximum=MAX_AMOUNT)
    barcode = ma.fields.String(allow_none=True, load_default=None,
                               validate=[ma.validate.Length(max=64), no_nul])
    category = ma.fields.String(allow_none=True, load_default=None,
                                validate=[ma.validate.Length(max=255), no_nul])
    redeemable = JsonBoolean(load_default=True,
                             metadata={"description": "false: bonuses never pay for this item"})
    accruable = JsonBoolean(load_default=True,
                            metadata={"description": "false: this item earns no bonuses"})


_FIELDS = frozenset(CatalogEntry._fields)


def _text(value, longest: int) -> bool:
    return type(value) is str and 0 < len(value) <= longest and "\x00" not in value


def _optional_text(value, longest: int) -> bool:
    return value is None or (type(value) is str and len(value) <= longest and "\x00" not in value)


# A price as registers send it: "89.90", "7", "7.5"; anything else, and anything of 12 or
# more integer digits (near MAX_AMOUNT), goes the schema's way.
_PLAIN_PRICE = re.compile(r"([0-9]{1,11})(?:\.([0-9]{1,2}))?")
_KOPECKS = {None: 0} | {str(d): d * 10 for d in range(10)} | {f"{n:02d}": n for n in range(100)}


def _plain_entry(item) -> CatalogEntry | None:
    """The item as a CatalogEntry when it is plainly valid, else None. Never accepts what
    CatalogSyncItem refuses (a property test holds the two together); what it doubts goes to
    CatalogSyncItem, which finds the error or accepts."""
    if type(item) is not dict or not item.keys() <= _FIELDS:
        return None
    sku, name, price = item.get("sku"), item.get("name"), item.get("price")
    barcode, category = item.get("barcode"), item.get("category")
    redeemable, accruable = item.get("redeemable", True), item.get("accruable", True)
    if not (_text(sku, 64) and _text(name, 255) and _optional_text(barcode, 64)
            and _optional_text(category, 255) and type(redeemable) is bool
            and type(accruable) is bool and type(price) is str):
        return None
    plain_price = _PLAIN_PRICE.fullmatch(price)
    if plain_price is None:
        return None
    whole, fraction = plain_price.groups()
    return CatalogEntry(sku, name, int(whole) * 100 + _KOPECKS[fraction], barcode, category,
                        redeemable, accruable)


class CatalogItems(ma.fields.List):
    """The snapshot's items. Up to 100,000 of them: a plainly valid item is taken as it is
    (microseconds), only a doubtful one goes through CatalogSyncItem, whose messages and
    locations (body.items.<i>.<field>) the 422 carries."""

    def __init__(self, **kwargs):
        super().__init__(ma.fields.Nested(CatalogSyncItem), **kwargs)

    def _deserialize(self, value, attr, data, **kwargs) -> list[CatalogEntry]:
        if not isinstance(value, list):
            raise self.make_error("invalid")
        if len(value) > MAX_ITEMS:
            raise ma.ValidationError(f"at most {MAX_ITEMS} items")
        entries, errors = [], {}
        item_schema = CatalogSyncItem()
        for index, item in enumerate(value):
            entry = _plain_entry(item)
            if entry is None:
                try:
                    entry = CatalogEntry(**item_schema.load(item))
                except ma.ValidationError as error:
                    errors[index] = error.messages
                    if len(errors) == ERRORS_REPORTED:
                        break
                    continue
            entries.append(entry)
        if errors:
            raise ma.ValidationError(errors)
        return entries


class CatalogSyncRequest(Schema):
    storeId = ma.fields.String(required=True, validate=no_nul)
    items = CatalogItems(required=True, metadata={"maxItems": MAX_ITEMS})
    allowEmpty = JsonBoolean(load_default=False,
                             metadata={"description": "true to accept an empty snapshot, "
                                                      "which removes every product"})


class CatalogSyncResponse(ResponseSchema):
    id = ma.fields.String(required=True)
    storeId = ma.fields.String(attribute="store_id", required=True)
    received = ma.fields.Integer(required=True)
    created = ma.fields.Integer(required=True)
    updated = ma.fields.Integer(required=True)
    removed = ma.fields.Integer(required=True)
    unchanged = ma.fields.Integer(required=True)
    syncedAt = Timestamp(attribute="created_at", required=True)
