"""The back office's people: staff members, their sessions and welcome links, the failed
sign-ins that lock an email out, and the audit record of every change."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKeyConstraint, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime, utcnow
from app.models.base import TenantMixin


class StaffEmail(Base):
    """The emails staff sign in with, each anyone's once in the whole service: a table without
    a company, so that a company-distributed schema can still hold the rule (the members
    themselves are kept by company)."""

    __tablename__ = "staff_emails"

    email: Mapped[str] = mapped_column(String(254), primary_key=True)


class StaffMember(TenantMixin, Base):
    __tablename__ = "staff_members"
    __table_args__ = (
        UniqueConstraint("company_id", "email"),
        # Signing in names the email alone, as a key names its digest alone.
        Index("ix_staff_members_email", "email"),
    )

    email: Mapped[str] = mapped_column(String(254))  # lower-cased
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(16))
    # Argon2id; null until the welcome link is used.
    password_hash: Mapped[str | None] = mapped_column(String(200), nullable=True)
    locale: Mapped[str | None] = mapped_column(String(8), nullable=True)


class MemberToken:
    """A random token given to a member: only its SHA-256 is kept, so a copy of the table
    signs nobody in. Found by the digest alone (its own index), keyed with the company."""

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    token_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    staff_id: Mapped[str] = mapped_column(String(36))


def _of_member(table: str) -> tuple:
    return (ForeignKeyConstraint(["company_id", "staff_id"],
                                 ["staff_members.company_id", "staff_members.id"],
                                 ondelete="CASCADE"),
            Index(f"ix_{table}_member", "company_id", "staff_id"),
            Index(f"ix_{table}_token_digest", "token_digest"))


class StaffSession(MemberToken, Base):
    """A signed-in browser; the cookie carries the token."""

    __tablename__ = "staff_sessions"
    __table_args__ = _of_member("staff_sessions")

    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class StaffInvitation(MemberToken, Base):
    """A one-time welcome link where a new member sets their password."""

    __tablename__ = "staff_invitations"
    __table_args__ = _of_member("staff_invitations")

    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)


class SignInFailure(Base):
    """A wrong email or password, by email whether or not anyone has it: what the lockout
    counts. No company: an unknown email has none."""

    __tablename__ = "staff_sign_in_failures"
    __table_args__ = (Index("ix_staff_sign_in_failures_email", "email", "failed_at"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"),
                                    primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(254))
    failed_at: Mapped[datetime] = mapped_column(UtcDateTime)


class AuditEvent(TenantMixin, Base):
    """Who changed what, from where: one row per change, never updated."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_company_created", "company_id", "created_at"),
        # A customer's activity finds the author of an adjustment by its ledger entry.
        Index("ix_audit_events_target", "company_id", "target_id"),
    )

    actor_kind: Mapped[str] = mapped_column(String(16))
    actor_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    actor_name: Mapped[str | None] = mapped_column(String(254), nullable=True)
    action: Mapped[str] = mapped_column(String(40))
    target_type: Mapped[str] = mapped_column(String(40))
    target_id: Mapped[str] = mapped_column(String(36))
    address: Mapped[str | None] = mapped_column(String(64), nullable=True)
