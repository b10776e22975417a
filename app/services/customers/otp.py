"""One-time codes that prove a shopper holds the phone being enrolled (docs/api.md#states, #otp).

A challenge is PENDING → CONFIRMED | EXPIRED (after CODE_LIFETIME) | FAILED (after MAX_ATTEMPTS
wrong codes), and a confirmed ENROLLMENT challenge is used once. The code itself is kept only
as an argon2id hash; it leaves the service once, in the `otp.code_issued` event that the
tenant's SMS gateway receives, whose stored payload keeps it encrypted until delivered.
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session

from app.models import OtpChallenge
from app.services.errors import Conflict, NotFound, RateLimited
from app.services.webhooks.outbox import record_event
from app.wire import format_timestamp

PURPOSES = ("ENROLLMENT",)
STATES = ("PENDING", "CONFIRMED", "EXPIRED", "FAILED")
CODE_DIGITS = 6
CODE_LIFETIME = timedelta(minutes=5)
RESEND_COOLDOWN = timedelta(seconds=60)
MAX_ATTEMPTS = 5
# A confirmation proves the shopper held the phone just now; enrolment must follow soon.
ENROLLMENT_WINDOW = timedelta(hours=1)

# OWASP's argon2id floor (19 MiB, 2 passes): ~50 ms a hash. A code lives five minutes and
# allows five guesses; the hash only has to keep a leaked table from handing out live codes.
_hasher = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)

_LATEST_FOR_PHONE = (select(OtpChallenge)
                     .where(OtpChallenge.company_id == bindparam("company_id"),
                            OtpChallenge.phone == bindparam("phone"))
                     .order_by(OtpChallenge.created_at.desc()).limit(1))
_BY_ID_FOR_UPDATE = (select(OtpChallenge)
                     .where(OtpChallenge.company_id == bindparam("company_id"),
                            OtpChallenge.id == bindparam("challenge_id"))
                     .with_for_update().execution_options(populate_existing=True))
_PHONE_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


def state_of(challenge: OtpChallenge, now: datetime) -> str:
    """The state as a caller sees it: a PENDING challenge past its life is EXPIRED."""
    if challenge.state == "PENDING" and challenge.expires_at <= now:
        return "EXPIRED"
    return challenge.state


def new_code() -> str:
    return f"{secrets.randbelow(10 ** CODE_DIGITS):0{CODE_DIGITS}d}"


def issue_challenge(session: Session, company_id: str, phone: str, purpose: str,
                    now: datetime, *, pepper: str) -> tuple[OtpChallenge, str]:
    """A new challenge and its code. Within the resend cooldown of the phone's last challenge:
    429 with the seconds to wait. A new challenge supersedes an earlier pending one, so only
    the latest code sent to the phone works."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose}")
    _take_turns_for_phone(session, company_id, phone)
    latest = session.scalar(_LATEST_FOR_PHONE, {"company_id": company_id, "phone": phone})
    if latest is not None:
        if latest.resend_available_at > now:
            # `now` may be from before this request waited its turn: never more than the cooldown.
            wait = min(math.ceil((latest.resend_available_at - now).total_seconds()),
                       int(RESEND_COOLDOWN.total_seconds()))
            raise RateLimited(f"a code was sent to this phone; a new one may be asked for in {wait} s",
                              retry_after=wait)
        if latest.state == "PENDING":
            latest.state = "EXPIRED"
    code = new_code()
    challenge = OtpChallenge(company_id=company_id, phone=phone, purpose=purpose, state="PENDING",
                             code_hash=_hasher.hash(code), attempts_left=MAX_ATTEMPTS,
                             expires_at=now + CODE_LIFETIME,
                             resend_available_at=now + RESEND_COOLDOWN, created_at=now)
    session.add(challenge)
    session.flush()
    record_event(session, company_id, "otp.code_issued", {
        "challengeId": challenge.id, "phone": phone, "code": code,
        "expiresAt": format_timestamp(challenge.expires_at)}, pepper=pepper)
    return challenge, code


def _take_turns_for_phone(session: Session, company_id: str, phone: str) -> None:
    """Requests for one phone's code take turns from here until they commit, so the cooldown
    check sees the challenge the one before made. A lock on a key, not a row: the first
    request for a phone has no challenge row to lock. On SQLite every transaction already
    holds the database's write lock (BEGIN IMMEDIATE)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(_PHONE_LOCK, {"key": f"otp-challenge:{company_id}:{phone}"})


@dataclass(frozen=True)
class Confirmation:
    challenge: OtpChallenge
    confirmed: bool  # False: a wrong code, counted against the attempts


def confirm_challenge(session: Session, company_id: str, challenge_id: str, code: str,
                      now: datetime) -> Confirmation:
    """Check a code under a row lock, so parallel guesses cannot share one attempt. A wrong
    code is counted (the caller must commit it even though it answers with an error); the
    last allowed wrong code leaves the challenge FAILED."""
    challenge = session.scalar(_BY_ID_FOR_UPDATE, {"company_id": company_id, "challenge_id": challenge_id})
    if challenge is None:
        raise NotFound("OTP challenge")
    state = state_of(challenge, now)
    if state != "PENDING":
        raise Conflict(f"the challenge is {state}; ask for a new code", code="invalid_state")
    if _matches(challenge.code_hash, code):
        challenge.state = "CONFIRMED"
        challenge.confirmed_at = now
        session.flush()
        return Confirmation(challenge, True)
    challenge.attempts_left -= 1
    if challenge.attempts_left <= 0:
        challenge.attempts_left = 0
        challenge.state = "FAILED"
    session.flush()
    return Confirmation(challenge, False)


def use_enrollment_challenge(session: Session, company_id: str, challenge_id: str | None,
                             phone: str, now: datetime) -> OtpChallenge:
    """Spend a confirmed, unused ENROLLMENT challenge of this phone (in the enrolment's own
    transaction: a failed enrolment leaves it unused). Anything else: 409
    enrollment_challenge_required."""
    challenge = None
    if challenge_id:
        challenge = session.scalar(_BY_ID_FOR_UPDATE, {"company_id": company_id,
                                                       "challenge_id": challenge_id})
    if (challenge is None or challenge.purpose != "ENROLLMENT" or challenge.phone != phone
        or challenge.state != "CONFIRMED" or challenge.used_at is not None
        or challenge.confirmed_at + ENROLLMENT_WINDOW < now):
        raise Conflict("enrolment needs a confirmed, unused ENROLLMENT challenge for this phone "
                       "(enrollmentChallengeId)", code="enrollment_challenge_required")
    challenge.used_at = now
    return challenge


def _matches(code_hash: str, code: str) -> bool:
    try:
        return _hasher.verify(code_hash, code)
    except (VerificationError, InvalidHashError):
        return False

