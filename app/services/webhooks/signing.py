"""Standard Webhooks signatures for outbound deliveries.

The receiver checks ``v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{raw body}")>``,
e.g. with the reference ``standardwebhooks`` library, so the body must be sent byte
for byte as it was signed.
"""

import base64
import binascii
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 32


def new_endpoint_secret() -> str:
    """Return a fresh endpoint secret: ``whsec_`` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode("ascii")


def _secret_key(secret: str) -> bytes:
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"webhook secret must start with {SECRET_PREFIX!r}")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
    except binascii.Error as exc:
        raise ValueError("webhook secret is not valid base64") from exc
    if not key:
        raise ValueError("webhook secret is empty")
    return key


def signature_headers(secret: str, event_id: str, timestamp: int, body: bytes, *,
                      previous: str | None = None) -> dict[str, str]:
    """Return the ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` headers.

    With a `previous` secret (a rotation's grace) the signature header carries both,
    space-separated, the current one first, as Standard Webhooks allows: a receiver holding
    either secret verifies the delivery."""
    if not event_id:
        raise ValueError("event id must not be empty")
    signed = f"{event_id}.{int(timestamp)}.".encode() + body
    signatures = [_signature(key, signed) for key in (secret, previous) if key is not None]
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(timestamp)),
        "webhook-signature": " ".join(signatures),
    }


def _signature(secret: str, signed: bytes) -> str:
    digest = hmac.new(_secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")
