"""API keys. Only an HMAC digest of a key is stored, never the key."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base, UtcDateTime
from app.models.base import TenantMixin


class ApiCredential(TenantMixin, Base):
    __tablename__ = "api_credentials"
    __table_args__ = (
        # Authentication looks a key up by digest alone: the key is what names the company.
        Index("ix_api_credentials_key_digest", "key_digest"),
        Index("ix_api_credentials_previous_key_digest", "previous_key_digest"),
    )

    name: Mapped[str] = mapped_column(String(100))
    scopes: Mapped[str] = mapped_column(String(500))  # space-separated
    prefix: Mapped[str] = mapped_column(String(16))
    key_digest: Mapped[str] = mapped_column(String(64))
    # After a rotation with a grace period the old key keeps working until then.
    previous_key_digest: Mapped[str | None] = mapped_column(String(64), nullable=True)
    previous_valid_until: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    rotated_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
