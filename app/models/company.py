"""The tenant, its loyalty program and its subscription."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime, utcnow
from app.models.base import Money, TenantMixin, new_id


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
    welcome_bonus: Mapped[int] = mapped_column(Money, default=0)
    birthday_bonus: Mapped[int] = mapped_column(Money, default=0)
    # JSON list of {name, minSpend, accrualBp} by minSpend (app.services.rewards.tiers).
    tiers: Mapped[str] = mapped_column(Text, default="[]")
    # When the tiers list last changed: a wallet pass shows its customer's tier, so the pass
    # has changed then too, though its account has not (app.services.cards.passkit).
    tiers_changed_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    tier_window_days: Mapped[int | None] = mapped_column(Integer, nullable=True, default=365)
    # Moved by every change of the window: an account whose spend was counted over an older
    # one is recounted on its next touch or by the periodic job (app.services.rewards.spend).
    tier_window_version: Mapped[int] = mapped_column(Integer, default=0)
    # Moved by every change to the company's campaigns: the register reads it with its context
    # and reloads its cached campaigns when it moved (app.services.program.matching).
    campaigns_version: Mapped[int] = mapped_column(Integer, default=0)
    # docs/api.md#expiry: null lifetime, points never expire; null reminder, no reward.expiring.
    points_lifetime_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    expiry_reminder_days: Mapped[int | None] = mapped_column(Integer, nullable=True, default=7)
    # How many days back a sale made offline may be sent (0: offline sales are refused).
    offline_sale_window_days: Mapped[int] = mapped_column(Integer, default=7)


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


class Campaign(TenantMixin, Base):
    """A time-boxed accrual percent for some stores, skus or catalog categories (docs/api.md#tiers).
    Deleted campaigns stay, inactive, for the sales that name them."""

    __tablename__ = "campaigns"
    __table_args__ = (Index("ix_campaigns_newest", "company_id", "created_at"),)

    name: Mapped[str] = mapped_column(String(100))
    starts_at: Mapped[datetime] = mapped_column(UtcDateTime)
    ends_at: Mapped[datetime] = mapped_column(UtcDateTime)
    accrual_bp: Mapped[int] = mapped_column(Integer)
    # JSON lists of strings; empty: the campaign does not narrow by that.
    skus: Mapped[str] = mapped_column(Text, default="[]")
    categories: Mapped[str] = mapped_column(Text, default="[]")
    store_ids: Mapped[str] = mapped_column(Text, default="[]")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
