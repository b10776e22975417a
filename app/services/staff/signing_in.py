"""Signing in and the sessions it starts: the lockout after repeated failures, a new session
token at each sign-in, the idle and absolute ends of a session, signing out."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.models import SignInFailure, StaffMember, StaffSession
from app.services.audit import events as audit
from app.services.errors import RateLimited
from app.services.staff import passwords
from app.services.staff.members import token_digest

FAILURES_ALLOWED = 5
FAILURE_WINDOW = timedelta(minutes=15)
IDLE = timedelta(minutes=30)
LONGEST_SESSION = timedelta(hours=12)
# last_seen_at is written at most this often: not one write per page.
SEEN_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class SignedIn:
    """A session's member, as the portal needs them on every page."""

    token: str
    staff_id: str
    company_id: str
    name: str
    email: str
    role: str
    locale: str | None


def _lockout_ends(session: Session, email: str, now: datetime) -> datetime | None:
    count, last = session.execute(
        select(func.count(), func.max(SignInFailure.failed_at))
        .where(SignInFailure.email == email, SignInFailure.failed_at > now - FAILURE_WINDOW)).one()
    if count >= FAILURES_ALLOWED:
        return last + FAILURE_WINDOW
    return None


def sign_in(session: Session, email: str, password: str, *, address: str | None,
            now: datetime) -> SignedIn | None:
    """A new session for the member whose email and password these are; None when they are
    not (the failure counted). 429 while the email is locked out, whatever the password."""
    email = email.strip().lower()[:254]
    ends = _lockout_ends(session, email, now)
    if ends is not None:
        raise RateLimited("too many failed sign-ins; try again later",
                          int((ends - now).total_seconds()) + 1)
    member = session.scalar(select(StaffMember).where(StaffMember.email == email))
    if not passwords.matches(member.password_hash if member else None, password):
        session.add(SignInFailure(email=email, failed_at=now))
        if member is not None:
            audit.record(session, member.company_id, _actor(member, address),
                         "staff.sign_in_failed", "staff_member", member.id, at=now)
        session.flush()
        return None
    return start_session(session, member, address=address, now=now)


def start_session(session: Session, member: StaffMember, *, address: str | None,
                  now: datetime) -> SignedIn:
    """A new session for the member (a new token every time: none is carried over)."""
    token = secrets.token_urlsafe(32)
    session.add(StaffSession(token_digest=token_digest(token), company_id=member.company_id,
                             staff_id=member.id, created_at=now, last_seen_at=now))
    audit.record(session, member.company_id, _actor(member, address), "staff.signed_in",
                 "staff_member", member.id, at=now)
    session.flush()
    return _signed_in(token, member)


def _actor(member: StaffMember, address: str | None) -> audit.Actor:
    return audit.Actor(audit.STAFF, member.id, member.name, address)


def _signed_in(token: str, member: StaffMember) -> SignedIn:
    return SignedIn(token, member.id, member.company_id, member.name, member.email, member.role,
                    member.locale)


def current(session: Session, token: str, now: datetime) -> SignedIn | None:
    """The session's member while it lasts (30 minutes idle, 12 hours in all); an ended
    session is deleted."""
    found = session.execute(select(StaffSession, StaffMember).join(
        StaffMember, (StaffMember.company_id == StaffSession.company_id)
        & (StaffMember.id == StaffSession.staff_id))
        .where(StaffSession.token_digest == token_digest(token))).first()
    if found is None:
        return None
    held, member = found
    if now - held.last_seen_at >= IDLE or now - held.created_at >= LONGEST_SESSION:
        session.delete(held)
        session.flush()
        return None
    if now - held.last_seen_at >= SEEN_EVERY:
        held.last_seen_at = now
        session.flush()
    return _signed_in(token, member)


def sign_out(session: Session, token: str) -> None:
    session.execute(delete(StaffSession).where(StaffSession.token_digest == token_digest(token)))


def forget_ended(session: Session, now: datetime) -> int:
    """Periodic upkeep: sessions past their idle or absolute end (a browser closed without
    signing out), and failures past the lockout's window, count for nothing any more."""
    ended = session.execute(delete(StaffSession).where(
        (StaffSession.last_seen_at <= now - IDLE)
        | (StaffSession.created_at <= now - LONGEST_SESSION))).rowcount
    return ended + session.execute(delete(SignInFailure).where(
        SignInFailure.failed_at <= now - FAILURE_WINDOW)).rowcount
