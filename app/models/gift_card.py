"""Gift cards issued by the operator; the code is stored only as a digest."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime
from app.models.base import Money, TenantMixin


class GiftCard(TenantMixin, Base):
    __tablename__ = "gift_cards"
    __table_args__ = (Index("ix_gift_cards_code_digest", "company_id", "code_digest", unique=True),)

    code_digest: Mapped[str] = mapped_column(String(64))
    last4: Mapped[str] = mapped_column(String(4))
    initial_amount: Mapped[int] = mapped_column(Money)
    balance: Mapped[int] = mapped_column(Money)
    state: Mapped[str] = mapped_column(String(20), default="ACTIVE")
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class GiftCardLookupMisses(Base):
    """Unknown codes looked up by one key in its current window (the embedded counter; with
    Redis the count lives there). One row per key, reset in place when its window is over."""

    __tablename__ = "gift_card_lookup_misses"

    company_id: Mapped[str] = mapped_column(String(36), ForeignKey("companies.id"),
                                            primary_key=True)
    credential_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # unix seconds of the window's first miss
    window_started: Mapped[int] = mapped_column(BigInteger)
    misses: Mapped[int] = mapped_column(Integer)
