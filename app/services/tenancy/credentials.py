"""Issuing, rotating, revoking and checking API keys. The key leaves here once, at issue or
rotation; only its digest is kept."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, bindparam, or_, select, union_all, update
from sqlalchemy.orm import Session

from app.models import ApiCredential, PreviousKey, Terminal
from app.services.audit import events as audit
from app.services.errors import Forbidden, NotFound
from app.services.locations.stores import RegisterTerminal
from app.services.tenancy import keys, previous_keys
from app.services.tenancy.scopes import ALL_SCOPES
from app.services.unit_of_work import UnitOfWork

LAST_USED_RESOLUTION = timedelta(minutes=1)


def issue_credential(session: Session, company_id: str, name: str, scopes: list[str], *,
                     pepper: str, now: datetime,
                     granted_by: frozenset[str] | None = None,
                     actor: audit.Actor | None = None) -> tuple[ApiCredential, str]:
    unknown = [scope for scope in scopes if scope not in ALL_SCOPES]
    if unknown:
        raise ValueError(f"unknown scopes: {', '.join(unknown)}")
    if granted_by is not None:
        _require_scopes(set(scopes), granted_by, "a key cannot grant scopes it does not hold")
    key = keys.new_key()
    ordered = [scope for scope in ALL_SCOPES if scope in set(scopes)]
    credential = ApiCredential(company_id=company_id, name=name, scopes=" ".join(ordered),
                               prefix=keys.display_prefix(key), key_digest=keys.key_digest(pepper, key),
                               created_at=now)
    session.add(credential)
    session.flush()
    audit.record(session, company_id, actor, "credential.issued", "credential", credential.id,
                 at=now)
    return credential, key


def list_credentials(session: Session, company_id: str) -> list[ApiCredential]:
    return list(session.scalars(select(ApiCredential).where(ApiCredential.company_id == company_id)
                                .order_by(ApiCredential.created_at, ApiCredential.id)))


def _credential_to_change(session: Session, company_id: str, credential_id: str,
                          changed_by: frozenset[str] | None) -> ApiCredential:
    """The credential under a row lock (concurrent rotations of one key take turns, each
    starting from the key the one before it left), if the caller may change it: a key may
    rotate or revoke only keys whose scopes are all its own, else it could obtain a stronger
    key. `changed_by` None is the operator, who may change any."""
    credential = session.get(ApiCredential, (company_id, credential_id), with_for_update=True,
                             populate_existing=True)
    if credential is None:
        raise NotFound("credential")
    if changed_by is not None:
        _require_scopes(set(credential.scopes.split()), changed_by,
                        "a key cannot change a key with scopes it does not hold")
    return credential


def _require_scopes(wanted: set[str], held: frozenset[str], refusal: str) -> None:
    missing = sorted(wanted - held)
    if missing:
        raise Forbidden(f"{refusal}: {', '.join(missing)}", code="insufficient_scope",
                        scope=" ".join(missing))


def rotate_credential(session: Session, company_id: str, credential_id: str, *, grace_seconds: int,
                      pepper: str, now: datetime,
                      changed_by: frozenset[str] | None = None,
                      actor: audit.Actor | None = None) -> tuple[ApiCredential, str]:
    credential = _credential_to_change(session, company_id, credential_id, changed_by)
    if credential.revoked_at is not None:
        raise NotFound("credential")
    key = keys.new_key()
    # Without a grace the replaced key ends now; the keys earlier rotations replaced keep
    # their own graces either way.
    previous_keys.keep(session, credential, now=now,
                       valid_until=now + timedelta(seconds=grace_seconds) if grace_seconds else None)
    credential.key_digest = keys.key_digest(pepper, key)
    credential.prefix = keys.display_prefix(key)
    credential.rotated_at = now
    session.flush()
    audit.record(session, company_id, actor, "credential.rotated", "credential", credential.id,
                 at=now)
    return credential, key


def revoke_credential(session: Session, company_id: str, credential_id: str, *, now: datetime,
                      changed_by: frozenset[str] | None = None,
                      actor: audit.Actor | None = None) -> None:
    credential = _credential_to_change(session, company_id, credential_id, changed_by)
    if credential.revoked_at is None:
        credential.revoked_at = now
        previous_keys.end_all(session, credential)
        session.flush()
        audit.record(session, company_id, actor, "credential.revoked", "credential",
                     credential.id, at=now)


@dataclass(frozen=True)
class KeyHolder:
    """What a request needs of its credential: who, what it may do, and from which register
    (when the request named one and it is a terminal of the company, active or not)."""

    company_id: str
    credential_id: str
    scopes: frozenset[str]
    terminal: RegisterTerminal | None = None


# Built once: the per-request lookup is a cached Core statement, not an ORM load.
_CREDENTIAL = (ApiCredential.company_id, ApiCredential.id, ApiCredential.scopes,
               ApiCredential.revoked_at, ApiCredential.last_used_at)
# The credential whose key the digest is, or whose replaced key in its grace it is: each
# branch on its own digest index, so the lookup stays one indexed statement.
_MATCHED = union_all(
    select(ApiCredential.company_id, ApiCredential.id.label("credential_id"))
    .where(ApiCredential.key_digest == bindparam("digest")),
    select(PreviousKey.company_id, PreviousKey.credential_id)
    .where(PreviousKey.key_digest == bindparam("digest"), PreviousKey.valid_until > bindparam("now")),
).subquery("matched")
_MATCHED_CREDENTIAL = and_(ApiCredential.company_id == _MATCHED.c.company_id,
                           ApiCredential.id == _MATCHED.c.credential_id)
_BY_DIGEST = select(*_CREDENTIAL).select_from(_MATCHED).join(ApiCredential, _MATCHED_CREDENTIAL)
# A register's request also names its terminal: found in the same round trip, on the
# (company_id, pos_key) unique key of the key's own company.
_BY_DIGEST_AT_REGISTER = select(
    *_CREDENTIAL, Terminal.id.label("terminal_id"), Terminal.store_id.label("terminal_store_id"),
    Terminal.name.label("terminal_name"), Terminal.pos_key.label("terminal_pos_key"),
    Terminal.state.label("terminal_state"),
).select_from(_MATCHED).join(ApiCredential, _MATCHED_CREDENTIAL).outerjoin(Terminal, and_(
    Terminal.company_id == ApiCredential.company_id, Terminal.pos_key == bindparam("pos_key"),
))
_TOUCH = update(ApiCredential).where(
    ApiCredential.company_id == bindparam("owner_id"), ApiCredential.id == bindparam("credential_id"),
    or_(ApiCredential.last_used_at.is_(None), ApiCredential.last_used_at < bindparam("stale_before")),
).values(last_used_at=bindparam("used_at"))


def authenticate(session: Session, key: str, *, pepper: str, now: datetime,
                 pos_key: str | None = None, claim=None) -> KeyHolder | None:
    """The holder of a key, or None. One indexed lookup, which also finds the terminal
    `pos_key` names when one is given; a malformed key costs none. `claim` (an idempotency
    record to take for the key's company: app/web/idempotency.py's Claim) rides with it, and
    learns whether it was taken."""
    if not keys.is_well_formed(key):
        return None
    digest = keys.key_digest(pepper, key)
    if pos_key is None:
        lookup, params = _BY_DIGEST, {"digest": digest, "now": now}
    else:
        lookup, params = _BY_DIGEST_AT_REGISTER, {"digest": digest, "now": now, "pos_key": pos_key}
    if claim is not None:
        lookup, params = claim.fold(lookup), {**params, **claim.params()}
    row = UnitOfWork.of(session).run(lookup, params).first()
    if row is not None and claim is not None:
        claim.claimed = row.claimed
    if row is None or row.revoked_at is not None:
        return None
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        # At most one write a minute per key; the condition keeps concurrent requests from
        # all writing it.
        session.execute(_TOUCH, {"owner_id": row.company_id, "credential_id": row.id,
                                 "stale_before": now - LAST_USED_RESOLUTION, "used_at": now})
    terminal = (RegisterTerminal(row.terminal_id, row.terminal_store_id, row.terminal_name,
                                 row.terminal_pos_key, row.terminal_state == "ACTIVE")
                if pos_key is not None and row.terminal_id is not None else None)
    return KeyHolder(row.company_id, row.id, frozenset(row.scopes.split()), terminal)
