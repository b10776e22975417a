"""Issuing, rotating, revoking and checking API keys. The key leaves here once, at issue or
rotation; only its digest is kept."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, or_, select, update
from sqlalchemy.orm import Session

from app.models import ApiCredential
from app.services import keys
from app.services.errors import Forbidden, NotFound
from app.services.scopes import ALL_SCOPES
from app.statements import run

LAST_USED_RESOLUTION = timedelta(minutes=1)


def issue_credential(session: Session, company_id: str, name: str, scopes: list[str], *,
                     pepper: str, now: datetime,
                     granted_by: frozenset[str] | None = None) -> tuple[ApiCredential, str]:
    unknown = [scope for scope in scopes if scope not in ALL_SCOPES]
    if unknown:
        raise ValueError(f"unknown scopes: {', '.join(unknown)}")
    if granted_by is not None and not set(scopes) <= granted_by:
        missing = sorted(set(scopes) - granted_by)
        raise Forbidden(f"a key cannot grant scopes it does not hold: {', '.join(missing)}",
                        code="insufficient_scope", scope=" ".join(missing))
    key = keys.new_key()
    ordered = [scope for scope in ALL_SCOPES if scope in set(scopes)]
    credential = ApiCredential(company_id=company_id, name=name, scopes=" ".join(ordered),
                               prefix=keys.display_prefix(key), key_digest=keys.key_digest(pepper, key),
                               created_at=now)
    session.add(credential)
    session.flush()
    return credential, key


def list_credentials(session: Session, company_id: str) -> list[ApiCredential]:
    return list(session.scalars(select(ApiCredential).where(ApiCredential.company_id == company_id)
                                .order_by(ApiCredential.created_at, ApiCredential.id)))


def get_credential(session: Session, company_id: str, credential_id: str) -> ApiCredential:
    credential = session.get(ApiCredential, (company_id, credential_id))
    if credential is None:
        raise NotFound("credential")
    return credential


def rotate_credential(session: Session, company_id: str, credential_id: str, *, grace_seconds: int,
                      pepper: str, now: datetime) -> tuple[ApiCredential, str]:
    credential = get_credential(session, company_id, credential_id)
    if credential.revoked_at is not None:
        raise NotFound("credential")
    key = keys.new_key()
    if grace_seconds > 0:
        credential.previous_key_digest = credential.key_digest
        credential.previous_valid_until = now + timedelta(seconds=grace_seconds)
    else:
        credential.previous_key_digest = None
        credential.previous_valid_until = None
    credential.key_digest = keys.key_digest(pepper, key)
    credential.prefix = keys.display_prefix(key)
    credential.rotated_at = now
    session.flush()
    return credential, key


def revoke_credential(session: Session, company_id: str, credential_id: str, *, now: datetime) -> None:
    credential = get_credential(session, company_id, credential_id)
    if credential.revoked_at is None:
        credential.revoked_at = now
        credential.previous_key_digest = None
        credential.previous_valid_until = None
        session.flush()


@dataclass(frozen=True)
class KeyHolder:
    """What a request needs of its credential: who, and what it may do."""

    company_id: str
    credential_id: str
    scopes: frozenset[str]


# Built once: the per-request lookup is a cached Core statement, not an ORM load.
_BY_DIGEST = select(
    ApiCredential.company_id, ApiCredential.id, ApiCredential.scopes, ApiCredential.key_digest,
    ApiCredential.previous_valid_until, ApiCredential.revoked_at, ApiCredential.last_used_at,
).where(or_(ApiCredential.key_digest == bindparam("digest"),
            ApiCredential.previous_key_digest == bindparam("digest")))
_TOUCH = update(ApiCredential).where(
    ApiCredential.company_id == bindparam("owner_id"), ApiCredential.id == bindparam("credential_id"),
    or_(ApiCredential.last_used_at.is_(None), ApiCredential.last_used_at < bindparam("stale_before")),
).values(last_used_at=bindparam("used_at"))


def authenticate(session: Session, key: str, *, pepper: str, now: datetime) -> KeyHolder | None:
    """The holder of a key, or None. One indexed lookup; a malformed key costs none."""
    if not keys.is_well_formed(key):
        return None
    digest = keys.key_digest(pepper, key)
    row = run(session, _BY_DIGEST, {"digest": digest}).first()
    if row is None or row.revoked_at is not None:
        return None
    if row.key_digest != digest and not (row.previous_valid_until and now < row.previous_valid_until):
        return None
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        # At most one write a minute per key; the condition keeps concurrent requests from
        # all writing it.
        session.execute(_TOUCH, {"owner_id": row.company_id, "credential_id": row.id,
                                 "stale_before": now - LAST_USED_RESOLUTION, "used_at": now})
    return KeyHolder(row.company_id, row.id, frozenset(row.scopes.split()))
