"""The tenant, its loyalty program and its subscription."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base, UtcDateTime, utcnow
from app.models.base import TenantMixin, new_id


class Company(Base):
    __tablename__ = "companies"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class Program(TenantMixin, Base):
    """One per company. Percents are basis points (5 % = 500)."""

    __tablename__ = "programs"
    __table_args__ = (UniqueConstraint("company_id"),)

    name: Mapped[str] = mapped_column(String(200))
    accrual_bp: Mapped[int] = mapped_column(Integer, default=500)
    max_redeem_bp: Mapped[int] = mapped_column(Integer, default=3000)
    accrual_delay_days: Mapped[int] = mapped_column(Integer, default=0)
    hold_ttl_seconds: Mapped[int] = mapped_column(Integer, default=900)
    enrollment_requires_otp: Mapped[bool] = mapped_column(Boolean, default=False)
    clawback_policy: Mapped[str] = mapped_column(String(20), default="UNLIMITED")
    # CONTRACT §14: null lifetime, points never expire; null reminder, no reward.expiring.
    points_lifetime_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    expiry_reminder_days: Mapped[int | None] = mapped_column(Integer, nullable=True, default=7)


class Subscription(TenantMixin, Base):
    """One per company; hold and commit refuse to run while it is stopped."""

    __tablename__ = "subscriptions"
    __table_args__ = (UniqueConstraint("company_id"),)

    tariff: Mapped[str] = mapped_column(String(50))
    register_limit: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    access_from: Mapped[datetime] = mapped_column(UtcDateTime)
    access_until: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)

    def is_stopped(self, now: datetime) -> bool:
        if self.status in ("SUSPENDED", "CANCELLED"):
            return True
        return self.access_until is not None and now > self.access_until
