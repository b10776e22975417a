"""The back office's people: staff members, their sessions and welcome links, the failed
sign-ins that lock an email out, and the audit record of every change."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKeyConstraint, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base, UtcDateTime, utcnow
from app.models.base import TenantMixin


class StaffMember(TenantMixin, Base):
    __tablename__ = "staff_members"
    __table_args__ = (
        # One person signs in by email alone, whatever their company: unique in the service.
        Index("ux_staff_members_email", "email", unique=True),
    )

    email: Mapped[str] = mapped_column(String(254))  # lower-cased
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(16))
    # Argon2id; null until the welcome link is used.
    password_hash: Mapped[str | None] = mapped_column(String(200), nullable=True)
    locale: Mapped[str | None] = mapped_column(String(8), nullable=True)


class StaffSession(Base):
    """A signed-in browser. The cookie carries a random token; only its digest is kept, so a
    copy of the table signs nobody in."""

    __tablename__ = "staff_sessions"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "staff_id"],
                             ["staff_members.company_id", "staff_members.id"], ondelete="CASCADE"),
        Index("ix_staff_sessions_member", "company_id", "staff_id"),
    )

    token_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    company_id: Mapped[str] = mapped_column(String(36))
    staff_id: Mapped[str] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class StaffInvitation(Base):
    """A one-time welcome link where a new member sets their password."""

    __tablename__ = "staff_invitations"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "staff_id"],
                             ["staff_members.company_id", "staff_members.id"], ondelete="CASCADE"),
        Index("ix_staff_invitations_member", "company_id", "staff_id"),
    )

    token_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    company_id: Mapped[str] = mapped_column(String(36))
    staff_id: Mapped[str] = mapped_column(String(36))
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)


class SignInFailure(Base):
    """A wrong email or password, by email whether or not anyone has it: what the lockout
    counts."""

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
