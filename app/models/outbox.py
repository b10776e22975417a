"""Events recorded in the transaction of the change, and their webhook deliveries."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKeyConstraint, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime
from app.models.base import TenantMixin


class OutboxEvent(TenantMixin, Base):
    __tablename__ = "outbox_events"
    references_company = False
    __table_args__ = (Index("ix_outbox_events_undispatched", "dispatched_at", "created_at"),)

    type: Mapped[str] = mapped_column(String(60))
    payload: Mapped[str] = mapped_column(Text)  # the exact JSON body that is signed and sent
    # Set once deliveries have been created for every matching endpoint.
    dispatched_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class AllowedWebhookHost(Base):
    """Operator's allow-list of webhook hosts (not a tenant table)."""

    __tablename__ = "allowed_webhook_hosts"

    host: Mapped[str] = mapped_column(String(253), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class WebhookEndpoint(TenantMixin, Base):
    __tablename__ = "webhook_endpoints"

    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[str] = mapped_column(Text)  # JSON list of names, or ["*"]
    description: Mapped[str | None] = mapped_column(String(500), nullable=True)
    # Signing needs the secret itself; it is kept encrypted under a key derived from the pepper.
    secret_encrypted: Mapped[str] = mapped_column(Text)
    # The secret the last rotation replaced, and until when deliveries are signed with it too.
    previous_secret_encrypted: Mapped[str | None] = mapped_column(Text, nullable=True)
    previous_secret_valid_until: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    state: Mapped[str] = mapped_column(String(20), default="ACTIVE")
    disabled_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class WebhookDelivery(TenantMixin, Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "event_id"], ["outbox_events.company_id", "outbox_events.id"]),
        ForeignKeyConstraint(
            ["company_id", "endpoint_id"], ["webhook_endpoints.company_id", "webhook_endpoints.id"]
        ),
        Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
        # Retention asks per event whether its deliveries are finished (migration 0010).
        Index("ix_webhook_deliveries_event", "company_id", "event_id"),
        # The back office reads a company's latest deliveries in this order (migration 0025).
        Index("ix_webhook_deliveries_company_recent", "company_id", "created_at", "id"),
    )

    event_id: Mapped[str] = mapped_column(String(36))
    endpoint_id: Mapped[str] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(20), default="PENDING")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    last_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
