"""API key format (docs/api.md#keys): `lk_live_` + 43 url-safe base64 characters + a 6-character
base62 CRC32 checksum, so a mistyped or made-up key is refused without a database lookup."""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import zlib

KEY_PREFIX = "lk_live_"
DISPLAY_PREFIX_LENGTH = 16
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_KEY_SHAPE = re.compile(r"^lk_live_[A-Za-z0-9_-]{43}[0-9A-Za-z]{6}$")


def _base62(number: int, width: int) -> str:
    digits = []
    while number:
        number, rest = divmod(number, 62)
        digits.append(_BASE62[rest])
    return "".join(reversed(digits)).rjust(width, "0")


def checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode("ascii")), 6)


def new_key() -> str:
    random_part = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")
    body = KEY_PREFIX + random_part
    return body + checksum(body)


def is_well_formed(key: str) -> bool:
    if not _KEY_SHAPE.match(key):
        return False
    return hmac.compare_digest(checksum(key[:-6]), key[-6:])


def key_digest(pepper: str, key: str) -> str:
    """What is stored and looked up: HMAC-SHA256 under the server's pepper (fast, not argon2:
    a 256-bit random key needs no stretching, and this runs on every request)."""
    return hmac.new(pepper.encode("utf-8"), key.encode("ascii"), hashlib.sha256).hexdigest()


def display_prefix(key: str) -> str:
    return key[:DISPLAY_PREFIX_LENGTH]
