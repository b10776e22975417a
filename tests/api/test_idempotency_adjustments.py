"""Idempotency (docs/api.md#idempotency), proven on the reward adjustment: one effect whatever the
retries."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from app.database.engine import utcnow
from app.models import IdempotencyRecord, LedgerEntry, OutboxEvent
from tests.api.test_customers import enrol
from tests.api.test_rewards_concurrency import together

BODY = {"amount": "25.00", "basis": "birthday"}


@pytest.fixture
def path(client, tenant):
    return f"/v1/customers/{enrol(client, tenant)['id']}/reward-adjustments"


def post(client, tenant, path, key, body=BODY):
    return client.post(path, json=body, headers=tenant.headers(Idempotency_Key=key))


def entries(db) -> int:
    db.expire_all()
    return db.scalar(select(func.count()).select_from(LedgerEntry))


def test_a_replay_answers_the_same_status_and_body_and_makes_no_second_entry(client, tenant, path, db):
    first = post(client, tenant, path, "key-00000001")
    replay = post(client, tenant, path, "key-00000001")
    assert first.status_code == replay.status_code == 201
    assert replay.get_json() == first.get_json()
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert entries(db) == 1
    assert db.scalar(select(func.count()).select_from(OutboxEvent)
                     .where(OutboxEvent.type == "reward.adjusted")) == 1
    assert client.get(path.replace("reward-adjustments", "reward-account"),
                      headers=tenant.headers()).get_json()["available"] == "25.00"


def test_the_same_body_in_another_key_order_is_a_replay(client, tenant, path, db):
    post(client, tenant, path, "key-00000002", {"amount": "25.00", "basis": "birthday"})
    replay = post(client, tenant, path, "key-00000002", {"basis": "birthday", "amount": "25.00"})
    assert replay.status_code == 201 and replay.headers["Idempotent-Replayed"] == "true"
    assert entries(db) == 1


@pytest.mark.parametrize("other", [{"amount": "26.00", "basis": "birthday"},
                                   {"amount": "25.00", "basis": "anniversary"}])
def test_the_key_with_another_body_is_422_idempotency_key_reused(client, tenant, path, db, other):
    post(client, tenant, path, "key-00000003")
    response = post(client, tenant, path, "key-00000003", other)
    assert response.status_code == 422
    assert response.get_json() == {"detail": [{
        "loc": ["header", "Idempotency-Key"], "msg": response.get_json()["detail"][0]["msg"],
        "type": "idempotency_key_reused"}]}
    assert entries(db) == 1


def test_the_key_on_another_customer_is_422(client, tenant, path, db):
    post(client, tenant, path, "key-00000004")
    other = f"/v1/customers/{enrol(client, tenant, phone='+79120000000')['id']}/reward-adjustments"
    response = post(client, tenant, other, "key-00000004")
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["type"] == "idempotency_key_reused"


def test_keys_belong_to_their_company(client, tenant, other_tenant, path, db):
    post(client, tenant, path, "key-00000005")
    other_path = f"/v1/customers/{enrol(client, other_tenant)['id']}/reward-adjustments"
    response = post(client, other_tenant, other_path, "key-00000005")
    assert response.status_code == 201 and "Idempotent-Replayed" not in response.headers
    assert entries(db) == 2


@pytest.mark.parametrize("key, ok", [("k" * 7, False), ("k" * 8, True), ("k" * 128, True),
                                     ("k" * 129, False)])
def test_key_length_is_8_to_128(client, tenant, path, db, key, ok):
    response = post(client, tenant, path, key)
    if ok:
        assert response.status_code == 201
    else:
        assert response.status_code == 422
        assert response.get_json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
        assert entries(db) == 0


def test_a_missing_key_is_422_on_the_header(client, tenant, path, db):
    response = client.post(path, json=BODY, headers=tenant.headers())
    assert response.status_code == 422
    assert response.get_json()["detail"] == [{"loc": ["header", "Idempotency-Key"],
                                              "msg": "Field required", "type": "missing"}]
    assert entries(db) == 0


def test_a_failed_request_keeps_no_record_so_a_retry_can_succeed(client, tenant, path, db):
    debit = {"amount": "-10.00", "basis": "fix"}
    assert post(client, tenant, path, "key-00000006", debit).status_code == 409
    post(client, tenant, path, "key-00000007")  # now there is a balance
    assert post(client, tenant, path, "key-00000006", debit).status_code == 201


def test_after_the_ttl_the_same_key_makes_a_new_effect(client, tenant, path, db, app):
    first = post(client, tenant, path, "key-00000008")
    ttl = app.config["SETTINGS"].idempotency_ttl
    db.execute(update(IdempotencyRecord).values(created_at=utcnow() - timedelta(seconds=ttl + 1)))
    db.commit()
    again = post(client, tenant, path, "key-00000008")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    assert again.get_json()["id"] != first.get_json()["id"]
    assert again.get_json()["balance"]["available"] == "50.00"
    assert entries(db) == 2
    # Within the TTL the new record replays again.
    assert post(client, tenant, path, "key-00000008").headers["Idempotent-Replayed"] == "true"


def test_a_record_just_inside_the_ttl_still_replays(client, tenant, path, db, app):
    post(client, tenant, path, "key-00000009")
    ttl = app.config["SETTINGS"].idempotency_ttl
    db.execute(update(IdempotencyRecord).values(created_at=utcnow() - timedelta(seconds=ttl - 60)))
    db.commit()
    assert post(client, tenant, path, "key-00000009").headers["Idempotent-Replayed"] == "true"
    assert entries(db) == 1


@pytest.mark.postgres
def test_twenty_concurrent_identical_requests_make_one_effect(app, tenant, path, db):
    def send(client, i):
        response = post(client, tenant, path, "key-concurrent")
        return response.status_code, response.get_json()

    answers = together(app, 20, send)
    assert {status for status, _ in answers} == {201}
    assert all(body == answers[0][1] for _, body in answers)
    assert entries(db) == 1
    assert answers[0][1]["balance"]["available"] == "25.00"
