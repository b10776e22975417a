"""Apple's Wallet web service (docs/api.md#wallet): the pass's own token, the devices registered for
its updates and which passes changed since a tag. The pushes that tell a device so are in
`pass_pushes`.

A pass's update tag is its reward account's `updated_at`: every change of what the pass shows
(balance, pending, the spend behind the tier) already writes it, so the register's path gains
nothing. The one other change is the program's tiers list, which moves customers between tiers
without writing their accounts: the tag is the later of the two (`ACCOUNT_PASS_CHANGED_AT`).
The member's name never changes after enrolment. Pushes are made due by the worker, from the events a change records (after commit, as
webhooks are) and, for changes that record none (accruals maturing), by a periodic sweep.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import string
from datetime import datetime, timedelta, timezone

from sqlalchemy import case, delete, select
from sqlalchemy.orm import Session

from app.database.engine import insert_of
from app.models import Program, RewardAccount, WalletPass, WalletRegistration
from app.services.errors import DomainError, NotFound
from app.services.tenancy.keys import key_digest

IDENTIFIER_MAX = 128  # deviceLibraryIdentifier, passTypeIdentifier, serialNumber
PUSH_TOKEN_MAX = 200
DEVICES_PER_PASS = 10
LOG_MESSAGES_MAX = 100
LOG_MESSAGE_CHARS = 1000
_TOKEN_PURPOSE = b"wallet-pass-authentication-token:"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class PassUnauthorized(DomainError):
    status = 401
    code = "invalid_pass_token"

    def __init__(self):
        super().__init__("not an ApplePass token of this pass")


def bad_request(detail: str) -> DomainError:
    return DomainError(detail, code="invalid_passkit_request", status=400)


# --- the pass's authenticationToken -------------------------------------------------------------

def pass_token(pepper: str, company_id: str, customer_id: str) -> str:
    """The pass's authenticationToken: derived, not drawn, so every download of the pass carries
    the same one and the digest kept for it never changes (43 characters, 256 bits)."""
    mac = hmac.new(pepper.encode("utf-8"), _TOKEN_PURPOSE + f"{company_id}:{customer_id}".encode(),
                   hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def issue_pass(session: Session, company_id: str, customer_id: str, *, pepper: str,
               now: datetime) -> str:
    """Record the pass (the digest of its token) at its first download; returns the token."""
    token = pass_token(pepper, company_id, customer_id)
    session.execute(insert_of(session, WalletPass).values(
        company_id=company_id, customer_id=customer_id, token_digest=key_digest(pepper, token),
        created_at=now).on_conflict_do_nothing())
    return token


def _presented_token(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    # Tokens we issue are ASCII (url-safe base64): any other byte opens no pass.
    if (scheme.lower() != "applepass" or not token or len(token) > IDENTIFIER_MAX
            or not token.isascii()):
        return None
    return token


def authorized_pass(session: Session, pass_type_id: str, serial_number: str,
                    authorization: str | None, *, our_pass_type: str | None, pepper: str,
                    lock: bool = False) -> tuple[str, str]:
    """(company_id, customer_id) of the pass the request names and its token opens; anything
    else (another pass type, an unknown serial, another pass's or company's token) is 401."""
    check_identifiers(pass_type_id, serial_number)
    token = _presented_token(authorization)
    if token is None or pass_type_id != our_pass_type:
        raise PassUnauthorized()
    query = select(WalletPass).where(WalletPass.customer_id == serial_number)
    found = session.scalar(query.with_for_update() if lock else query)
    if found is None or not hmac.compare_digest(found.token_digest, key_digest(pepper, token)):
        raise PassUnauthorized()
    return found.company_id, found.customer_id


def check_identifiers(*values: str) -> None:
    """Path values beyond Apple's bounds name nothing of ours: 404, as any unknown path id."""
    for value in values:
        if not value or len(value) > IDENTIFIER_MAX or not value.isprintable():
            raise NotFound("pass")


_HEX_DIGITS = frozenset(string.hexdigits)


def push_token_of(body) -> str:
    """The body's APNs device token: hexadecimal digits, ASCII only (str.isalnum and isdigit
    take the digits and letters of every script)."""
    token = body.get("pushToken") if isinstance(body, dict) else None
    if (not isinstance(token, str) or not 0 < len(token) <= PUSH_TOKEN_MAX
            or not _HEX_DIGITS.issuperset(token)):
        raise bad_request(f"pushToken must be 1 to {PUSH_TOKEN_MAX} hexadecimal digits")
    return token


def log_messages(body) -> list[str]:
    logs = body.get("logs") if isinstance(body, dict) else None
    if (not isinstance(logs, list) or len(logs) > LOG_MESSAGES_MAX
            or not all(isinstance(line, str) for line in logs)):
        raise bad_request(f"logs must be a list of at most {LOG_MESSAGES_MAX} strings")
    return [line[:LOG_MESSAGE_CHARS] for line in logs]


# --- registrations ------------------------------------------------------------------------------

_TIERS_CHANGED_AT = (select(Program.tiers_changed_at)
                     .where(Program.company_id == RewardAccount.company_id).scalar_subquery())
# When the pass of a reward account (in the statement's FROM) last changed.
ACCOUNT_PASS_CHANGED_AT = case((_TIERS_CHANGED_AT > RewardAccount.updated_at, _TIERS_CHANGED_AT),
                               else_=RewardAccount.updated_at)
# The same, of a registration's pass.
PASS_CHANGED_AT = (select(ACCOUNT_PASS_CHANGED_AT)
                   .where(RewardAccount.company_id == WalletRegistration.company_id,
                          RewardAccount.customer_id == WalletRegistration.customer_id)
                   .scalar_subquery())


def pass_changed_at(account_updated_at: datetime, tiers_changed_at: datetime | None) -> datetime:
    """`ACCOUNT_PASS_CHANGED_AT` of values in hand."""
    if tiers_changed_at is None:
        return account_updated_at
    return max(account_updated_at, tiers_changed_at)


def register(session: Session, company_id: str, customer_id: str, device_id: str,
             push_token: str, *, now: datetime) -> bool:
    """Register the device for the pass's pushes (the pass row is locked by the caller); True
    when it is new. A pass keeps its `DEVICES_PER_PASS` latest devices: the oldest makes room,
    being likeliest a phone long gone."""
    found = session.get(WalletRegistration, (company_id, customer_id, device_id))
    if found is not None:
        found.push_token = push_token
        session.flush()
        return False
    others = session.scalars(
        select(WalletRegistration).where(WalletRegistration.company_id == company_id,
                                         WalletRegistration.customer_id == customer_id)
        .order_by(WalletRegistration.created_at.desc())).all()
    for stale in others[DEVICES_PER_PASS - 1:]:
        session.delete(stale)
    changed_at = session.scalar(select(ACCOUNT_PASS_CHANGED_AT).where(
        RewardAccount.company_id == company_id, RewardAccount.customer_id == customer_id))
    session.add(WalletRegistration(company_id=company_id, customer_id=customer_id,
                                   device_library_id=device_id, push_token=push_token,
                                   created_at=now, seen_updated_at=changed_at or now,
                                   push_due_at=None, push_attempts=0))
    session.flush()
    return True


def unregister(session: Session, company_id: str, customer_id: str, device_id: str) -> None:
    session.execute(delete(WalletRegistration).where(
        WalletRegistration.company_id == company_id, WalletRegistration.customer_id == customer_id,
        WalletRegistration.device_library_id == device_id))


# --- update tags ----------------------------------------------------------------------------------

def update_tag(moment: datetime) -> str:
    """A tag is the moment in whole microseconds since 1970: exact, and ordered as numbers."""
    return str((moment - _EPOCH) // timedelta(microseconds=1))


def _moment_of(tag: str | None) -> datetime | None:
    """The moment of a tag we gave; None for any other text (then every pass is listed, which
    a device can only fetch again): ASCII digits only, and a moment a date can hold."""
    if not tag or len(tag) > 20 or not (tag.isascii() and tag.isdigit()):
        return None
    try:
        return _EPOCH + timedelta(microseconds=int(tag))
    except OverflowError:
        return None


def serials_since(session: Session, device_id: str, pass_type_id: str, tag: str | None, *,
                  our_pass_type: str | None) -> tuple[list[str], str | None]:
    """The serials of the device's passes changed after `tag`, and the tag to ask with next."""
    check_identifiers(device_id, pass_type_id)
    if pass_type_id != our_pass_type:
        return [], None
    rows = session.execute(
        select(WalletRegistration.customer_id, ACCOUNT_PASS_CHANGED_AT)
        .join(RewardAccount, (RewardAccount.company_id == WalletRegistration.company_id)
              & (RewardAccount.customer_id == WalletRegistration.customer_id))
        .where(WalletRegistration.device_library_id == device_id)).all()
    since = _moment_of(tag)
    changed = sorted(serial for serial, at in rows if since is None or at > since)
    return changed, (update_tag(max(at for _, at in rows)) if changed else None)


def last_modified(changed_at: datetime) -> datetime:
    """The pass's Last-Modified: the second of its change (the header holds whole seconds)."""
    return changed_at.replace(microsecond=0)


def modified_since(changed_at: datetime, if_modified_since: datetime | None) -> bool:
    """Compared at whole seconds, as the header is: a device sending back the Last-Modified it
    was given is answered 304 until the pass changes in a later second."""
    return if_modified_since is None or last_modified(changed_at) > if_modified_since
