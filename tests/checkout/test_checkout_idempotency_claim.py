"""On PostgreSQL an idempotent request's record is taken by its first statement, the key's
lookup (app/web/idempotency.py: Claim), without its fingerprint, which the completion writes. What
must hold: the record ends with its fingerprint, and a request refused after the lookup keeps
no record, so its retry is not told the key is in use or was used with another body."""
import pytest
from sqlalchemy import select

from app.models import IdempotencyRecord
from tests.checkout.test_checkout_queries import statements

pytestmark = pytest.mark.postgres


def _records(shop, key: str) -> list:
    def work(session):
        return [(row.fingerprint, row.status_code) for row in session.execute(
            select(IdempotencyRecord).where(IdempotencyRecord.key == key)).scalars()]
    return shop.arrange(work)


def test_the_record_rides_with_the_keys_lookup_and_ends_with_its_fingerprint(app, register,
                                                                              shop):
    customer = shop.customer()
    body = {"externalReceiptId": "R-claim", "customerId": customer}
    with statements(app) as seen:
        first = register.call("POST", "/v1/checkout-sessions", body, key="claim-key-1", expect=201)
    claims = [number for number, sql in enumerate(seen)
              if "INSERT INTO idempotency_records" in sql]
    assert claims == [0] and "api_credentials" in seen[0]
    [(stored, status)] = _records(shop, "claim-key-1")
    assert status == 201 and len(stored) == 64
    again = register.call("POST", "/v1/checkout-sessions", body, key="claim-key-1", expect=201)
    assert again.headers["Idempotent-Replayed"] == "true" and again.get_json() == first.get_json()
    other = register.call("POST", "/v1/checkout-sessions", {**body, "externalReceiptId": "R-2"},
                          key="claim-key-1", expect=422)
    assert other.get_json()["detail"][0]["type"] == "idempotency_key_reused"


def test_a_request_refused_after_the_lookup_keeps_no_record(register, shop):
    customer = shop.customer()
    body = {"externalReceiptId": "R-refused", "customerId": customer}
    shop.terminal("INACTIVE")  # the key is good; its register is not: 403 after the lookup
    refused = register.call("POST", "/v1/checkout-sessions", body, key="claim-key-2", expect=403)
    assert refused.get_json()["code"] == "terminal_inactive"
    assert _records(shop, "claim-key-2") == []
    shop.terminal("ACTIVE")
    assert "Idempotent-Replayed" not in register.call(
        "POST", "/v1/checkout-sessions", {**body, "externalReceiptId": "R-other"},
        key="claim-key-2", expect=201).headers
    assert [status for _, status in _records(shop, "claim-key-2")] == [201]
