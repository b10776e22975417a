"""Every create honours an Idempotency-Key (docs/api.md#idempotency) or refuses it with a 422; none
ignores it. The register's operations, which require a key, are proven in tests/checkout; these are
the creates where the spec makes the key optional."""
from __future__ import annotations

import uuid

import pytest
from flask.views import MethodView
from sqlalchemy import func, select

from app.api.base import OPTIONAL_KEY, Blueprint, operations
from app.models import ApiCredential, Customer, OtpChallenge, Store, Terminal
from tests.api.locations_helpers import create_store, store_body

PHONE = "+79161234567"


def test_every_create_of_a_key_holder_honours_or_refuses_a_key(app):
    creates = [(rule, operation) for method, rule, operation in operations(app)
               if method == "POST" and operation.scope is not None]
    assert len(creates) >= 15
    for rule, operation in creates:
        honoured, refused = operation.idempotency is not None, operation.key_refused is not None
        assert honoured != refused, rule


def test_a_new_create_honours_a_key_without_saying_so():
    blp = Blueprint("example", __name__)

    class Things(MethodView):
        @blp.operation("createThing", scope="locations:write")
        def post(self):
            return {}

        @blp.operation("listThings", scope="locations:read")
        def get(self):
            return {}

    assert Things.post.operation.idempotency == OPTIONAL_KEY
    assert Things.post.operation.idempotency_required is False
    assert Things.get.operation.idempotency is None


def count(db, model) -> int:
    db.expire_all()
    return db.scalar(select(func.count()).select_from(model))


def _terminal_body(client, tenant):
    return {"storeId": create_store(client, tenant)["id"], "name": "Register 1"}


CREATES = {
    "/v1/stores": (Store, lambda client, tenant: store_body()),
    "/v1/terminals": (Terminal, _terminal_body),
    "/v1/customers": (Customer, lambda client, tenant: {"phone": PHONE, "firstName": "Ира"}),
    "/v1/otp-challenges": (OtpChallenge,
                           lambda client, tenant: {"phone": PHONE, "purpose": "ENROLLMENT"}),
}


@pytest.mark.parametrize("path", sorted(CREATES))
def test_the_same_key_twice_makes_one_and_replays_its_answer(client, tenant, db, path):
    model, make_body = CREATES[path]
    body, key = make_body(client, tenant), uuid.uuid4().hex
    before = count(db, model)
    first = client.post(path, json=body, headers=tenant.headers(Idempotency_Key=key))
    replay = client.post(path, json=body, headers=tenant.headers(Idempotency_Key=key))
    assert first.status_code == replay.status_code == 201, first.get_json()
    assert replay.get_json() == first.get_json()
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert count(db, model) == before + 1


def test_the_same_key_with_another_body_is_refused(client, tenant, db):
    key = uuid.uuid4().hex
    assert client.post("/v1/stores", json=store_body(),
                       headers=tenant.headers(Idempotency_Key=key)).status_code == 201
    other = client.post("/v1/stores", json=store_body(),
                        headers=tenant.headers(Idempotency_Key=key))
    assert other.status_code == 422
    assert other.get_json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    assert other.get_json()["detail"][0]["type"] == "idempotency_key_reused"
    assert count(db, Store) == 1


def test_without_a_key_each_request_creates(client, tenant, db):
    body = store_body(name="Twin")
    for _ in range(2):
        assert client.post("/v1/stores", json=body, headers=tenant.headers()).status_code == 201
    assert count(db, Store) == 2


@pytest.mark.parametrize("key", ["", "k" * 129])
def test_an_optional_key_out_of_range_is_a_422(client, tenant, db, key):
    response = client.post("/v1/stores", json=store_body(),
                           headers=tenant.headers(Idempotency_Key=key))
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    assert count(db, Store) == 0


def test_creates_that_cannot_replay_refuse_a_key_and_make_nothing(app, client, tenant, db):
    refused = [rule for method, rule, operation in operations(app)
               if method == "POST" and operation.key_refused]
    assert "/v1/api-credentials" in refused and "/v1/webhook-endpoints" in refused
    assert "/v1/webhook-endpoints/<endpoint_id>/rotate-secret" in refused
    keys_before = count(db, ApiCredential)
    for rule in refused:
        path = rule.replace("<credential_id>", uuid.uuid4().hex).replace(
            "<challenge_id>", uuid.uuid4().hex).replace("<endpoint_id>", uuid.uuid4().hex)
        response = client.post(path, json={"name": "replayed", "scopes": ["company:read"]},
                               headers=tenant.headers(Idempotency_Key=uuid.uuid4().hex))
        assert response.status_code == 422, (rule, response.get_json())
        assert response.get_json()["detail"] == [{
            "loc": ["header", "Idempotency-Key"], "msg": response.get_json()["detail"][0]["msg"],
            "type": "idempotency_key_not_supported"}]
    assert count(db, ApiCredential) == keys_before
    issued = client.post("/v1/api-credentials", json={"name": "plain", "scopes": ["company:read"]},
                         headers=tenant.headers())
    assert issued.status_code == 201
