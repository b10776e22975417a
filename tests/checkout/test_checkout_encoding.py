"""The register's answers are the compact JSON of their values, byte for byte, whatever its
strings hold, and their replays are the same bytes; a body is read as the standard library
reads it, integers past 64 bits included (the decoder and encoder on this path are faster
ones, which must not show)."""
from __future__ import annotations

import json

from tests.checkout.conftest import line

# Quotes, backslashes, control characters, line and paragraph separators, Cyrillic, an astral
# character: every escaping rule of JSON text meets one of them.
HOSTILE = 'Чек «№1» "q" \\ / \t\n\x01\x1f\x7f \u2028\u2029 𝄞'


def _compact(response) -> bytes:
    """The bytes `json.dumps(value, ensure_ascii=False, separators=(",", ":"))` writes."""
    return json.dumps(json.loads(response.get_data()), ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")


def test_every_answer_of_a_checkout_is_its_compact_json_and_replays_as_the_same_bytes(
        register, shop, idem):
    customer = shop.customer("1000.00")
    answers = []

    def post(path, body):
        key = idem()
        first = register.call("POST", path, body, key=key)
        again = register.call("POST", path, body, key=key)
        assert first.status_code == 201, first.get_json()
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.get_data() == first.get_data()
        answers.append(first)
        return first.get_json()

    session = post("/v1/checkout-sessions", {"externalReceiptId": HOSTILE, "customerId": customer})
    base = f"/v1/checkout-sessions/{session['id']}"
    quote = post(f"{base}/quote", {"lines": [line(HOSTILE, "100.00", sku=HOSTILE[:64]),
                                             line("2", "50.00")]})
    post(f"{base}/hold", {"quoteId": quote["id"]})
    sale = post(f"{base}/commit", {"quoteId": quote["id"]})
    assert session["externalReceiptId"] == HOSTILE == sale["lines"][0]["lineId"]
    for answer in answers:
        assert answer.get_data() == _compact(answer)
        assert answer.headers["Content-Length"] == str(len(answer.get_data()))


def test_an_integer_past_64_bits_is_read_whole(client, tenant):
    """Not as the float next to it: a strict integer field then says it is out of range, as
    it always did, not that it is no integer."""
    for value in ("100000000000000000000", "18446744073709551616", "-9223372036854775809",
                  "1" * 40):
        response = client.patch("/v1/program", data=f'{{"holdTtlSeconds": {value}}}',
                                content_type="application/json", headers=tenant.headers())
        assert response.status_code == 422, response.get_json()
        [item] = response.get_json()["detail"]
        assert item["loc"] == ["body", "holdTtlSeconds"] and "Not a valid" not in item["msg"], item


def test_a_key_given_twice_takes_the_last_and_what_json_allows_beyond_is_judged_by_the_schema(
        register, shop):
    customer = shop.customer("100.00")
    raw = (f'{{"externalReceiptId": "first", "customerId": "{customer}", '
           f'"externalReceiptId": "R-last"}}')
    response = register.client.post("/v1/checkout-sessions", data=raw,
                                     content_type="application/json",
                                     headers=register.headers(None))
    assert response.status_code == 201 and response.get_json()["externalReceiptId"] == "R-last"
    for number in ("NaN", "Infinity", "1e400"):
        session = response.get_json()["id"]
        refused = register.client.post(
            f"/v1/checkout-sessions/{session}/quote",
            data=f'{{"lines": [], "redeemAmount": {number}}}',
            content_type="application/json", headers=register.headers(None))
        assert refused.status_code == 422, refused.get_json()
        assert {tuple(item["loc"]) for item in refused.get_json()["detail"]} == {
            ("body", "lines"), ("body", "redeemAmount")}
