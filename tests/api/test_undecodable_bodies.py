"""Bodies the server cannot decode or represent are a 422, never a 500 (docs/api.md#errors): lone
UTF-16 surrogates, nesting deeper than 100, integers beyond the parser's limit, money beyond a
column's range; a body over MAX_CONTENT_LENGTH is a 413 however it is sent."""
from __future__ import annotations

import io
import json
import uuid

import pytest
from sqlalchemy import func, select

from app.models import CatalogItem, Customer, IdempotencyRecord, Store
from tests.api.locations_helpers import create_store
from tests.api.test_customers import enrol

# Each operation with a valid body as a template: (method, path, body, the string field the
# surrogate goes into). Paths may name {customer} and {store}.
OPERATIONS = {
    "enrol": ("POST", "/v1/customers", {"phone": "+79123456789", "firstName": "Ivan"},
              ["firstName"]),
    "adjust": ("POST", "/v1/customers/{customer}/reward-adjustments",
               {"amount": "10.00", "basis": "goodwill"}, ["basis"]),
    "store": ("POST", "/v1/stores", {"name": "Shop", "address": "Main st 1", "city": "Moscow",
                                     "latitude": 55.75, "longitude": 37.61}, ["name"]),
    "catalog": ("POST", "/v1/catalog-syncs",
                {"storeId": "{store}", "items": [{"sku": "A-1", "name": "Milk", "price": "89.90"}]},
                ["items", 0, "name"]),
    "otp": ("POST", "/v1/otp-challenges", {"phone": "+79120000000", "purpose": "ENROLLMENT"},
            ["phone"]),
}


@pytest.fixture
def places(client, tenant):
    return {"customer": enrol(client, tenant, phone="+79990000001")["id"],
            "store": create_store(client, tenant)["id"]}


def _send(client, tenant, places, name, raw: str | bytes):
    method, path, _, _ = OPERATIONS[name]
    return client.open(path.format(**places), method=method, data=raw,
                       content_type="application/json",
                       headers=tenant.headers(Idempotency_Key=uuid.uuid4().hex))


def _template(name, places) -> dict:
    return json.loads(json.dumps(OPERATIONS[name][2]).replace("{store}", places["store"]))


def _set(body: dict, loc: list, value) -> None:
    *parents, last = loc
    for part in parents:
        body = body[part]
    body[last] = value


def _refused(response, loc: list, kind: str):
    assert response.status_code == 422, (response.status_code, response.get_data(as_text=True)[:300])
    [item] = response.get_json()["detail"]
    assert item["loc"] == loc and item["type"] == kind, item


def _nothing_written(db, tenant):
    db.expire_all()
    counted = {model.__name__: db.scalar(select(func.count()).select_from(model)
                                         .where(model.company_id == tenant.company_id))
               for model in (Customer, Store, CatalogItem, IdempotencyRecord)}
    # The fixture's own customer and store only; no idempotency record was left behind.
    assert counted == {"Customer": 1, "Store": 1, "CatalogItem": 0, "IdempotencyRecord": 0}


@pytest.mark.parametrize("name", OPERATIONS)
def test_a_lone_surrogate_is_422_on_its_field(client, tenant, places, db, name):
    body = _template(name, places)
    field = OPERATIONS[name][3]
    _set(body, field, "PLACEHOLDER")
    # json.dumps would escape a real character; the surrogate must travel as the escape \ud800.
    raw = json.dumps(body).replace("PLACEHOLDER", "Iv\\ud800an")
    _refused(_send(client, tenant, places, name, raw), ["body", *field], "string_unicode")
    # A surrogate in a key (an unknown field) is named by the object it stands in.
    keyed = json.dumps(body).replace('"PLACEHOLDER"', '"x", "\\udfff": "y"')
    _refused(_send(client, tenant, places, name, keyed), ["body", *field[:-1]], "string_unicode")
    _nothing_written(db, tenant)
    # A proper pair is a character like any other.
    paired = json.dumps(body).replace("PLACEHOLDER", "Iv\\ud83d\\ude00an")
    response = _send(client, tenant, places, name, paired)
    assert response.status_code in (201, 422), response.get_json()
    assert response.status_code == 201 or name == "otp"  # a phone of letters is no phone


@pytest.mark.parametrize("name", OPERATIONS)
@pytest.mark.parametrize("depth", [101, 1000, 100_000])
def test_nesting_deeper_than_100_is_422(client, tenant, places, db, name, depth):
    raw = "[" * depth + "]" * depth
    _refused(_send(client, tenant, places, name, raw), ["body"], "json_too_deep")
    nested_in_a_field = json.dumps(_template(name, places))[:-1] + ', "extra": ' + raw + "}"
    _refused(_send(client, tenant, places, name, nested_in_a_field), ["body"], "json_too_deep")
    _nothing_written(db, tenant)


@pytest.mark.parametrize("name", OPERATIONS)
def test_nesting_of_100_is_read_and_judged_by_the_schema(client, tenant, places, name):
    response = _send(client, tenant, places, name, "[" * 100 + "]" * 100)
    assert response.status_code == 422
    assert all(item["type"] != "json_too_deep" for item in response.get_json()["detail"])


@pytest.mark.parametrize("name", OPERATIONS)
def test_an_integer_beyond_the_parsers_limit_is_422(client, tenant, places, db, name):
    raw = json.dumps(_template(name, places))[:-1] + ', "extra": ' + "9" * 5000 + "}"
    _refused(_send(client, tenant, places, name, raw), ["body"], "json_number_too_long")
    _nothing_written(db, tenant)


@pytest.mark.parametrize("price", ["999999999999999999.99", "100000000000.01", "92233720368547758.08"])
def test_a_catalog_price_beyond_the_column_is_422(client, tenant, places, db, price):
    body = {"storeId": places["store"], "items": [{"sku": "A-1", "name": "Milk", "price": price}]}
    _refused(_send(client, tenant, places, "catalog", json.dumps(body)),
             ["body", "items", 0, "price"], "value_error")
    _nothing_written(db, tenant)


def test_the_largest_catalog_price_is_kept(client, tenant, places, db):
    body = {"storeId": places["store"], "items": [{"sku": "A-1", "name": "Milk",
                                                   "price": "100000000000.00"}]}
    assert _send(client, tenant, places, "catalog", json.dumps(body)).status_code == 201
    assert db.scalar(select(CatalogItem.price)) == 100_000_000_000 * 100


def _chunked(client, tenant, places, name, raw: bytes):
    """Sent without Content-Length, in the environ of a WSGI server that ends the input (as
    gunicorn's does): the body itself has to be measured."""
    method, path, _, _ = OPERATIONS[name]
    return client.open(path.format(**places), method=method, input_stream=io.BytesIO(raw),
                       content_type="application/json",
                       headers=tenant.headers(Idempotency_Key=uuid.uuid4().hex,
                                              Transfer_Encoding="chunked"),
                       environ_overrides={"wsgi.input_terminated": True})


@pytest.mark.parametrize("name", ["enrol", "catalog"])
def test_a_chunked_body_over_the_limit_is_413(app, client, tenant, places, name):
    too_large = b'{"x": "' + b"a" * app.config["MAX_CONTENT_LENGTH"] + b'"}'
    response = _chunked(client, tenant, places, name, too_large)
    assert response.status_code == 413, response.get_data(as_text=True)[:300]
    assert response.get_json()["code"] == "payload_too_large"

    fits = json.dumps(_template(name, places)).encode()
    response = _chunked(client, tenant, places, name, fits)
    assert response.status_code == 201, response.get_data(as_text=True)[:300]
