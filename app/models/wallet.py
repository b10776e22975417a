"""Apple Wallet passes given out, and the devices registered for their updates
(docs/api.md#wallet)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKeyConstraint, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime


class WalletPass(Base):
    """A customer's pass, written when it is first downloaded: the digest of its
    authenticationToken (the token itself is never stored)."""

    __tablename__ = "wallet_passes"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "customer_id"], ["customers.company_id", "customers.id"]),
        # A device names a pass by its serial alone.
        Index("ix_wallet_passes_customer", "customer_id"),
    )

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(36), primary_key=True)  # the serialNumber
    token_digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class WalletRegistration(Base):
    """One device registered for one pass's updates. At most one push waits per registration
    (`push_due_at`): changes made meanwhile are folded into it."""

    __tablename__ = "wallet_registrations"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "customer_id"],
                             ["wallet_passes.company_id", "wallet_passes.customer_id"]),
        # A device asks for its passes without naming a company.
        Index("ix_wallet_registrations_device", "device_library_id"),
        Index("ix_wallet_registrations_push_due", "push_due_at"),
    )

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    device_library_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    push_token: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    # The account's updated_at the last push (or the registration) covered.
    seen_updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    # Set when a push is waiting (or leased to a worker); null when the device is up to date.
    push_due_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    push_attempts: Mapped[int] = mapped_column(Integer, default=0)


class SweepMark(Base):
    """How far a periodic sweep has read (the wallet push sweep's `updated_at`), so that each
    run reads only what changed since. Of no company: a reference table under Citus."""

    __tablename__ = "sweep_marks"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    reached_at: Mapped[datetime] = mapped_column(UtcDateTime)
