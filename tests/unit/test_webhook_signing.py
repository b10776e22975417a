import base64
import json
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app.services.webhooks.signing import new_endpoint_secret, signature_headers

BODY = (
    b'{"type":"sale.committed","timestamp":"2024-05-01T10:00:00Z",'
    b'"data":{"id":"s_1","total":"12.50"}}'
)


def test_endpoint_secret_is_prefixed_base64_of_32_bytes():
    secret = new_endpoint_secret()

    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32


def test_endpoint_secrets_differ():
    assert len({new_endpoint_secret() for _ in range(20)}) == 20


def test_headers_carry_id_and_unix_seconds():
    headers = signature_headers(new_endpoint_secret(), "evt_42", 1714557600, BODY)

    assert set(headers) == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    assert headers["webhook-id"] == "evt_42"
    assert headers["webhook-timestamp"] == "1714557600"
    assert headers["webhook-signature"].startswith("v1,")


def test_matches_the_standard_webhooks_reference_vector():
    headers = signature_headers(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        b'{"test": 2432232314}',
    )

    assert headers["webhook-signature"] == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_reference_library_verifies_the_signature():
    secret = new_endpoint_secret()
    headers = signature_headers(secret, "evt_1", int(time.time()), BODY)

    assert Webhook(secret).verify(BODY, headers) == json.loads(BODY)


def test_a_previous_secret_adds_its_signature_after_the_current_ones():
    current, previous = new_endpoint_secret(), new_endpoint_secret()
    alone = signature_headers(current, "evt_1", 1714557600, BODY)
    both = signature_headers(current, "evt_1", 1714557600, BODY, previous=previous)
    before = signature_headers(previous, "evt_1", 1714557600, BODY)

    assert both["webhook-signature"] == (
        f"{alone['webhook-signature']} {before['webhook-signature']}")


def test_non_ascii_body_is_signed_as_sent():
    secret = new_endpoint_secret()
    body = json.dumps({"data": {"name": "Анна"}}, ensure_ascii=False).encode()
    headers = signature_headers(secret, "evt_2", int(time.time()), body)

    assert Webhook(secret).verify(body, headers) == {"data": {"name": "Анна"}}


@pytest.mark.parametrize(
    ("tamper", "value"),
    [("webhook-id", "evt_other"), ("webhook-timestamp", None), ("body", None), ("secret", None)],
)
def test_any_change_breaks_verification(tamper, value):
    secret = new_endpoint_secret()
    now = int(time.time())
    headers = signature_headers(secret, "evt_1", now, BODY)
    body, verify_secret = BODY, secret
    if tamper == "webhook-id":
        headers["webhook-id"] = value
    elif tamper == "webhook-timestamp":
        headers["webhook-timestamp"] = str(now - 1)
    elif tamper == "body":
        body = BODY.replace(b"12.50", b"99.50")
    else:
        verify_secret = new_endpoint_secret()

    with pytest.raises(WebhookVerificationError):
        Webhook(verify_secret).verify(body, headers)


@pytest.mark.parametrize(
    "secret", ["", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!"]
)
def test_malformed_secret_is_rejected(secret):
    with pytest.raises(ValueError):
        signature_headers(secret, "evt_1", 1714557600, BODY)


def test_empty_event_id_is_rejected():
    with pytest.raises(ValueError):
        signature_headers(new_endpoint_secret(), "", 1714557600, BODY)
