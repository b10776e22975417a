"""Secrets the service must read back (a webhook endpoint's signing secret, an OTP code
waiting for delivery) are kept only encrypted, under a key derived from API_KEY_PEPPER, one
per purpose. Changing the pepper makes them unreadable (cryptography's InvalidToken)."""
from __future__ import annotations

import base64
import hashlib
import hmac
from functools import lru_cache

from cryptography.fernet import Fernet


@lru_cache(maxsize=8)
def _fernet(pepper: str, purpose: str) -> Fernet:
    key = hmac.new(pepper.encode(), purpose.encode(), hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def seal(pepper: str, purpose: str, text: str) -> str:
    return _fernet(pepper, purpose).encrypt(text.encode("utf-8")).decode("ascii")


def unseal(pepper: str, purpose: str, token: str) -> str:
    return _fernet(pepper, purpose).decrypt(token.encode("ascii")).decode("utf-8")
