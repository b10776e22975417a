"""Every checkout operation replays on a retried Idempotency-Key (docs/api.md#idempotency): the same
answer, `Idempotent-Replayed: true`, and exactly one effect."""
import zlib

import pytest
from sqlalchemy import select, update

from app.models import IdempotencyRecord
from tests.checkout.conftest import line

RECEIPT = [line("1", "100.00", quantity="2"), line("2", "50.00")]


def _replayed(register, method, path, body, key):
    first = register.call(method, path, body, key=key)
    again = register.call(method, path, body, key=key)
    assert first.status_code < 300 and again.status_code == first.status_code
    assert again.get_json() == first.get_json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers
    changed = register.call(method, path, {**body, "unexpected": 1} if body else {"x": 1}, key=key)
    assert changed.status_code == 422
    assert changed.get_json()["detail"][0]["type"] == "idempotency_key_reused"
    return first.get_json()


def test_each_operation_replays_with_one_effect(register, shop, idem):
    customer = shop.customer("100.00")
    session = _replayed(register, "POST", "/v1/checkout-sessions",
                        {"externalReceiptId": "R-1", "customerId": customer}, idem())
    base = f"/v1/checkout-sessions/{session['id']}"
    quote = _replayed(register, "POST", f"{base}/quote", {"lines": RECEIPT}, idem())
    hold = _replayed(register, "POST", f"{base}/hold", {"quoteId": quote["id"]}, idem())
    assert shop.account(customer)["reserved"] == "45.00" == hold["amount"]
    released = _replayed(register, "DELETE", f"{base}/hold", {"reason": "retry"}, idem())
    assert released["state"] == "RELEASED" and shop.account(customer)["reserved"] == "0.00"
    register.hold(session["id"], quote["id"])
    sale = _replayed(register, "POST", f"{base}/commit", {"quoteId": quote["id"]}, idem())
    assert shop.account(customer)["available"] == "60.25"  # one redemption, one accrual
    returned = _replayed(register, "POST", f"/v1/sales/{sale['id']}/returns",
                         {"lines": [{"lineId": "1", "quantity": "1"}]}, idem())
    assert returned["saleState"] == "PARTIALLY_RETURNED"
    lookup = register.lookup("R-1")
    assert [l["returnedQuantity"] for l in lookup["lines"]] == ["1.000", "0.000"]
    assert len(shop.events("sale.returned")) == len(shop.events("sale.committed")) == 1
    assert shop.verify() == []


@pytest.mark.parametrize("key, loc_type", [
    (None, "missing"), ("k" * 7, "string_length"), ("k" * 101, "string_length")])
def test_the_key_is_required_and_8_to_100_long(register, shop, key, loc_type):
    customer = shop.customer()
    headers = register.headers(key="placeholder")
    if key is None:
        del headers["Idempotency-Key"]
    else:
        headers["Idempotency-Key"] = key
    response = register.client.post("/v1/checkout-sessions", headers=headers,
                                     json={"externalReceiptId": "R-1", "customerId": customer})
    assert response.status_code == 422
    assert response.get_json()["detail"][0] == {
        "loc": ["header", "Idempotency-Key"], "msg": response.get_json()["detail"][0]["msg"],
        "type": loc_type}
    assert register.call("POST", "/v1/checkout-sessions",
                         {"externalReceiptId": "R-1", "customerId": customer},
                         key="k" * 100).status_code == 201


def test_every_checkout_operation_declares_the_range(app):
    from app.api.base import operations
    declared = {(method, rule): operation for method, rule, operation in operations(app)
                if "/checkout-sessions" in rule or "/sales" in rule}
    session = "/v1/checkout-sessions/<checkout_session_id>"
    keyed = ("checkout:write", (8, 100))
    assert {key: (op.scope, op.idempotency) for key, op in declared.items()} == {
        ("POST", "/v1/checkout-sessions"): keyed,
        ("POST", f"{session}/quote"): keyed,
        ("POST", f"{session}/hold"): keyed,
        ("DELETE", f"{session}/hold"): keyed,
        ("POST", f"{session}/commit"): keyed,
        ("GET", "/v1/sales/by-external-receipt/<path:external_receipt_id>"):
            ("checkout:write", None),
        ("POST", "/v1/sales/<sale_id>/returns"): keyed,
    }


def test_answers_are_kept_compressed_and_one_kept_as_text_before_still_replays(register, shop,
                                                                               idem):
    customer, key = shop.customer(), idem()
    body = {"externalReceiptId": "R-text", "customerId": customer}
    first = register.call("POST", "/v1/checkout-sessions", body, key=key, expect=201)

    def as_stored_before_compression(session):
        record = IdempotencyRecord
        answer = session.scalar(select(record.answer).where(record.key == key))
        assert zlib.decompress(answer) == first.get_data()
        session.execute(update(record).where(record.key == key).values(
            answer=None, response_body=zlib.decompress(answer).decode("utf-8")))
    shop.arrange(as_stored_before_compression)

    again = register.call("POST", "/v1/checkout-sessions", body, key=key, expect=201)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_data() == first.get_data()
