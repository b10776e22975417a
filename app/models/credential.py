"""API keys. Only an HMAC digest of a key is stored, never the key."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKeyConstraint, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime
from app.models.base import TenantMixin


class ApiCredential(TenantMixin, Base):
    __tablename__ = "api_credentials"
    __table_args__ = (
        # Authentication looks a key up by digest alone: the key is what names the company.
        Index("ix_api_credentials_key_digest", "key_digest"),
    )

    name: Mapped[str] = mapped_column(String(100))
    scopes: Mapped[str] = mapped_column(String(500))  # space-separated
    prefix: Mapped[str] = mapped_column(String(16))
    key_digest: Mapped[str] = mapped_column(String(64))
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    rotated_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class PreviousKey(Base):
    """A key a rotation with a grace period replaced: it keeps working until `valid_until`,
    however many rotations follow (docs/api.md#keys)."""

    __tablename__ = "api_credential_previous_keys"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "credential_id"],
                             ["api_credentials.company_id", "api_credentials.id"]),
        # Looked up by digest alone, as the credential's own key.
        Index("ix_api_credential_previous_keys_key_digest", "key_digest"),
    )

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    credential_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # The order in which the credential's rotations replaced its kept keys: the lowest is
    # the oldest, the one an 11th replaced key ends early.
    sequence: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    key_digest: Mapped[str] = mapped_column(String(64))
    valid_until: Mapped[datetime] = mapped_column(UtcDateTime)
