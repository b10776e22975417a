"""One example for every JSON body of the interface document, composed from the document's
own schemas: a field's `example` (money "150.00", a phone), else its default, else a value
named for the field in its schema (a coffee shop: its store, its register, a cappuccino on the
receipt), else the first value of its enum, else a value of its type and format. Composed
rather than written by hand, an example cannot drift from its schema; the tests load every
request example with the request's own schema."""
from __future__ import annotations

import uuid

SAMPLES = {
    ("string", "date-time"): "2026-05-01T10:00:00Z",
    ("string", "date"): "1990-05-17",
    ("string", "email"): "anna@example.com",
    ("string", "url"): "https://pos.example.com/hooks/loyalty",
    ("string", None): "Coffee House",
    ("integer", None): 1,
    ("number", None): 55.75,
    ("boolean", None): True,
}
# By the field's name, where its type alone would say little.
NAMED = {"url": "https://pos.example.com/hooks/loyalty",
         "name": "Coffee House", "firstName": "Anna", "lastName": "Ivanova", "city": "Moscow",
         "address": "Tverskaya st. 1", "sku": "CAP-300", "lineId": "1", "barcode": "4601234567893",
         "category": "coffee", "posKey": "till-1", "externalId": "cashier-17",
         "externalReceiptId": "R-2026-000123", "latitude": 55.7558, "longitude": 37.6173,
         "timezone": "Europe/Moscow", "description": "The till system's event receiver",
         "reason": "the customer left without paying", "tariff": "standard",
         "prefix": "lk_live_3f9a", "code": "482913", "detail": "no such customer",
         "basis": "goodwill after a late order", "month": "2026-06", "msg": "Unknown field.",
         "type": "unknown_field", "status": "ok", "key": "store", "period": "2026-05-01",
         "cardNumber": "2200 0000 0000 0123", "email": "anna@example.com",
         "cardUrl": "https://loyalty.example.com/c/Qm9udXNDYXJk", "categories": "pastries",
         "lastUpdated": "1714557600", "phone": "+79161234567", "skus": "CROISSANT-1",
         "receiptText": "Coffee Stars: +7.50 bonuses", "serialNumbers": "2200000000000123",
         "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
         # A cappuccino and a croissant, 430.00, 50 bonuses spent, 5 % of what was paid earned.
         "price": "250.00", "amount": "250.00", "totalAmount": "430.00", "discount": "50.00",
         "accrual": "19.00", "accrued": "19.00", "redeemed": "50.00", "redeemable": "86.00",
         "available": "1250.00", "pending": "19.00", "reserved": "0.00", "quantity": "1.000",
         "returnedQuantity": "0.000", "initialAmount": "3000.00", "welcomeBonus": "100.00",
         "birthdayBonus": "200.00", "minSpend": "15000.00", "spend": "8400.00",
         "createdAt": "2026-05-01T10:00:00Z", "committedAt": "2026-05-01T10:02:30Z",
         "expiresAt": "2026-05-02T10:00:00Z", "accrualAvailableAt": "2026-05-15T10:02:30Z",
         "availableAt": "2026-05-15T10:02:30Z", "updatedAt": "2026-05-01T10:02:30Z"}
# By the schema and the field's name, where one name means different things.
IN_SCHEMA = {
    ("StoreResponse", "name"): "Coffee House on Tverskaya",
    ("CreateStoreRequest", "name"): "Coffee House on Tverskaya",
    ("PlaceDirectoryStore", "name"): "Coffee House on Tverskaya",
    ("CatalogSyncItem", "name"): "Cappuccino 300 ml",
    ("QuoteLineRequest", "name"): "Cappuccino 300 ml",
    ("SaleLineResponse", "name"): "Cappuccino 300 ml",
    ("TerminalResponse", "name"): "Front counter register",
    ("CreateTerminalRequest", "name"): "Front counter register",
    ("UpdateTerminalRequest", "name"): "Front counter register",
    ("CompanyResponse", "name"): "Coffee House LLC",
    ("CheckoutCashier", "name"): "Olga Smirnova",
    ("CashierResponse", "name"): "Olga Smirnova",
    ("CampaignResponse", "name"): "Double points on pastries",
    ("CreateCampaignRequest", "name"): "Double points on pastries",
    ("UpdateCampaignRequest", "name"): "Double points on pastries",
    ("CampaignFigures", "name"): "Double points on pastries",
    ("ProgramResponse", "name"): "Coffee Stars",
    ("UpdateProgramRequest", "name"): "Coffee Stars",
    ("TierResponse", "name"): "Gold", ("TierSetting", "name"): "Gold",
    ("TierCount", "name"): "Gold", ("NextTierResponse", "name"): "Platinum",
    ("TierStandingResponse", "name"): "Gold",
    ("CredentialResponse", "name"): "Front counter POS",
    ("CreateCredentialRequest", "name"): "Front counter POS",
    ("IssuedCredentialResponse", "name"): "Front counter POS",
    ("RegisterGroup", "name"): "Coffee House on Tverskaya",
    ("ConfirmOtpChallengeRequest", "code"): "482913",
    ("ErrorResponse", "code"): "not_found", ("CustomerExistsError", "code"): "customer_exists",
    ("CustomerExistsError", "detail"): "a customer with this phone is already enrolled",
}


def an_id(owner: str) -> str:
    """The same id for the same thing across the document, a different one for each thing."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"loyalty-example:{owner}"))


def _named(schema_name: str, name: str):
    if (schema_name, name) in IN_SCHEMA:
        return IN_SCHEMA[(schema_name, name)]
    if name in NAMED:
        return NAMED[name]
    if name == "id":
        return an_id(schema_name.removesuffix("Response").removeprefix("Issued"))
    if name.endswith("Id") and name != "enrollmentChallengeId":
        return an_id(name.removesuffix("Id"))
    if name.endswith("Ids"):
        return an_id(name.removesuffix("Ids"))
    if name == "enrollmentChallengeId":
        return an_id("OtpChallenge")
    return NAMED.get(name)


def example_of(schema: dict, schemas: dict, name: str = "", owner: str = "") -> object:
    if "$ref" in schema:
        referred = schema["$ref"].rsplit("/", 1)[1]
        return example_of(schemas[referred], schemas, name, referred)
    if schema.get("type") in ("string", "number") and "enum" not in schema:
        named = _named(owner, name)
        if named is not None:
            return named
    for key in ("example", "default"):
        if schema.get(key) is not None:
            return schema[key]
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            return example_of(schema[key][0], schemas, name, owner)
    if schema.get("enum"):
        return schema["enum"][0]
    if "properties" in schema:
        return {field_name: example_of(field, schemas, field_name, owner)
                for field_name, field in schema["properties"].items()}
    kind = schema.get("type", "object")
    if kind == "array":
        return [example_of(schema.get("items", {}), schemas, name, owner)]
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
