"""Passwords: the rules for a new one, and Argon2id hashes (argon2-cffi's defaults, which
follow RFC 9106's recommendation)."""
from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from app.services.errors import InvalidField

SHORTEST = 12
LONGEST = 1024  # hashing a megabyte of "password" is a cost nobody should be able to send

_hasher = PasswordHasher()
# What an unknown email's attempt is checked against, so it takes a known one's time.
_NOBODY = _hasher.hash("no staff member has this password")


def checked(password: str, email: str) -> str:
    """The password if it may be one: 12..1024 characters, not the email."""
    if len(password) < SHORTEST:
        raise InvalidField(["body", "password"], f"must be at least {SHORTEST} characters",
                           "string_length")
    if len(password) > LONGEST:
        raise InvalidField(["body", "password"], f"must be at most {LONGEST} characters",
                           "string_too_long")
    if password.strip().lower() == email.strip().lower():
        raise InvalidField(["body", "password"], "must not be the email", "value_error")
    return password


def digest(password: str) -> str:
    return _hasher.hash(password)


def matches(stored: str | None, password: str) -> bool:
    """Whether the password is the one hashed; with nothing stored, the same work is done
    against a hash nobody's password matches."""
    if len(password) > LONGEST:  # never a password: the same work, then no
        stored = None
        password = password[:LONGEST]
    try:
        return _hasher.verify(stored or _NOBODY, password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False
