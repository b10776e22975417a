"""Staff members: added (with a welcome link, or a password given at once), listed, given
another role, removed. Removing a member or changing their role ends their sessions."""
from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models import Company, StaffEmail, StaffInvitation, StaffMember, StaffSession
from app.services.audit import events as audit
from app.services.errors import Conflict, InvalidField, NotFound
from app.services.staff import passwords
from app.services.staff.roles import ROLES

WELCOME_VALID = timedelta(hours=72)
LONGEST_NAME = 100
LONGEST_EMAIL = 254


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def normalised_email(email: str) -> str:
    email = email.strip().lower()
    local, at, domain = email.partition("@")
    if not at or not local or "." not in domain or len(email) > LONGEST_EMAIL or " " in email:
        raise InvalidField(["body", "email"], "must be an email address", "value_error")
    return email


def _role(role: str) -> str:
    if role not in ROLES:
        raise InvalidField(["body", "role"], f"must be one of {', '.join(ROLES)}", "value_error")
    return role


def add_member(session: Session, company_id: str, *, email: str, role: str,
               name: str | None, actor: audit.Actor | None, now: datetime) -> StaffMember:
    """A new member of the company, without a password yet (409 staff_exists when the email
    is anyone's)."""
    if session.get(Company, company_id) is None:
        raise NotFound("company")
    email = normalised_email(email)
    name = (name or "").strip() or email.partition("@")[0]
    if len(name) > LONGEST_NAME:
        raise InvalidField(["body", "name"], f"must be at most {LONGEST_NAME} characters",
                           "string_too_long")
    role = _role(role)
    if session.get(StaffEmail, email) is not None:
        raise Conflict("a staff member has this email already", code="staff_exists")
    try:
        with session.begin_nested():  # the same email added at the same moment elsewhere
            session.add(StaffEmail(email=email))
    except IntegrityError as exc:
        raise Conflict("a staff member has this email already", code="staff_exists") from exc
    member = StaffMember(company_id=company_id, email=email, name=name, role=role,
                         created_at=now)
    session.add(member)
    session.flush()
    audit.record(session, company_id, actor, "staff.added", "staff_member", member.id, at=now)
    return member


def invite(session: Session, member: StaffMember, now: datetime) -> str:
    """A one-time welcome token (72 hours); any earlier one of the member's stops working."""
    session.execute(delete(StaffInvitation).where(StaffInvitation.company_id == member.company_id,
                                                  StaffInvitation.staff_id == member.id))
    token = secrets.token_urlsafe(32)
    session.add(StaffInvitation(token_digest=token_digest(token), company_id=member.company_id,
                                staff_id=member.id, expires_at=now + WELCOME_VALID))
    session.flush()
    return token


def invited_member(session: Session, token: str, now: datetime) -> StaffMember:
    """The member a welcome token is for, while it is valid and unused."""
    invitation = session.scalar(select(StaffInvitation).where(
        StaffInvitation.token_digest == token_digest(token)))
    if invitation is None or invitation.expires_at <= now:
        raise NotFound("invitation")
    return session.get(StaffMember, (invitation.company_id, invitation.staff_id))


def accept_invitation(session: Session, token: str, password: str, now: datetime) -> StaffMember:
    """The welcome link used: the password set, the link spent."""
    member = invited_member(session, token, now)
    set_password(session, member, password)
    session.execute(delete(StaffInvitation).where(
        StaffInvitation.token_digest == token_digest(token)))
    return member


def set_password(session: Session, member: StaffMember, password: str) -> None:
    member.password_hash = passwords.digest(passwords.checked(password, member.email))
    session.flush()


def members(session: Session, company_id: str) -> list[StaffMember]:
    return list(session.scalars(select(StaffMember).where(StaffMember.company_id == company_id)
                                .order_by(func.lower(StaffMember.name), StaffMember.email)))


def member_of(session: Session, company_id: str, staff_id: str) -> StaffMember:
    member = session.get(StaffMember, (company_id, staff_id))
    if member is None:
        raise NotFound("staff member")
    return member


def by_email(session: Session, email: str) -> StaffMember | None:
    return session.scalar(select(StaffMember).where(StaffMember.email == email.strip().lower()))


def change_role(session: Session, member: StaffMember, role: str, *,
                actor: audit.Actor | None, now: datetime) -> None:
    if member.role == _role(role):
        return
    member.role = role
    end_sessions(session, member)
    audit.record(session, member.company_id, actor, "staff.role_changed", "staff_member",
                 member.id, at=now)


def remove(session: Session, member: StaffMember, *, actor: audit.Actor | None,
           now: datetime) -> None:
    """The member gone, with their sessions and welcome link."""
    end_sessions(session, member)
    session.execute(delete(StaffInvitation).where(StaffInvitation.company_id == member.company_id,
                                                  StaffInvitation.staff_id == member.id))
    audit.record(session, member.company_id, actor, "staff.removed", "staff_member", member.id,
                 at=now)
    session.execute(delete(StaffEmail).where(StaffEmail.email == member.email))
    session.delete(member)
    session.flush()


def end_sessions(session: Session, member: StaffMember) -> None:
    session.execute(delete(StaffSession).where(StaffSession.company_id == member.company_id,
                                               StaffSession.staff_id == member.id))
