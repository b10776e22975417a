"""A receipt at the register: session, quotes, hold, sale and its returns."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (ForeignKeyConstraint, Index, Integer, LargeBinary, String, Text,
                        UniqueConstraint, text)
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime
from app.models.base import Money, TenantMixin

# The states of docs/api.md#states, named once: the services move rows between them, the schemas
# document them.
OPEN, HELD, COMMITTED, EXPIRED = "OPEN", "HELD", "COMMITTED", "EXPIRED"
SESSION_STATES = (OPEN, HELD, COMMITTED, EXPIRED)
ACTIVE, CAPTURED, RELEASED = "ACTIVE", "CAPTURED", "RELEASED"
HOLD_STATES = (ACTIVE, CAPTURED, RELEASED, EXPIRED)
PARTIALLY_RETURNED, RETURNED = "PARTIALLY_RETURNED", "RETURNED"
SALE_STATES = (COMMITTED, PARTIALLY_RETURNED, RETURNED)



def _customer_fk() -> ForeignKeyConstraint:
    return ForeignKeyConstraint(["company_id", "customer_id"], ["customers.company_id", "customers.id"])


class CheckoutSession(TenantMixin, Base):
    __tablename__ = "checkout_sessions"
    references_company = False
    __table_args__ = (
        _customer_fk(),
        # The upkeep's sessions due to expire: only the live ones are in it (migration 0028),
        # so a session's last move (to COMMITTED or EXPIRED) adds no entry.
        Index("ix_checkout_sessions_expiry", "expires_at",
              postgresql_where=text("state IN ('OPEN', 'HELD')"),
              sqlite_where=text("state IN ('OPEN', 'HELD')")),
    )

    external_receipt_id: Mapped[str] = mapped_column(String(128))
    customer_id: Mapped[str] = mapped_column(String(36))
    terminal_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    store_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    cashier_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    state: Mapped[str] = mapped_column(String(20), default=OPEN)
    latest_quote_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)


class Quote(TenantMixin, Base):
    __tablename__ = "quotes"
    references_company = False
    __table_args__ = (
        ForeignKeyConstraint(
            ["company_id", "checkout_session_id"], ["checkout_sessions.company_id", "checkout_sessions.id"]
        ),
    )

    checkout_session_id: Mapped[str] = mapped_column(String(36))
    # JSON: the request's lines and their catalog flags, read back by the commit; packed
    # (app/wire.py), or, for quotes made before migration 0027, as text in `lines`.
    packed_lines: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    lines: Mapped[str | None] = mapped_column(Text, nullable=True)
    redeem_cap: Mapped[int | None] = mapped_column(Money, nullable=True)
    total_amount: Mapped[int] = mapped_column(Money)
    redeemable: Mapped[int] = mapped_column(Money)
    discount: Mapped[int] = mapped_column(Money)
    accrual: Mapped[int] = mapped_column(Money)
    restriction_reason: Mapped[str | None] = mapped_column(String(40), nullable=True)


class Hold(TenantMixin, Base):
    __tablename__ = "holds"
    references_company = False
    __table_args__ = (
        _customer_fk(),
        Index("ix_holds_session", "company_id", "checkout_session_id"),
        # The upkeep's holds due to expire, and the ledger check's active holds: only the
        # active ones are in it (migration 0028), so a hold's capture adds no entry.
        Index("ix_holds_expiry", "expires_at", postgresql_where=text("state = 'ACTIVE'"),
              sqlite_where=text("state = 'ACTIVE'")),
    )

    checkout_session_id: Mapped[str] = mapped_column(String(36))
    customer_id: Mapped[str] = mapped_column(String(36))
    quote_id: Mapped[str] = mapped_column(String(36))
    amount: Mapped[int] = mapped_column(Money)
    state: Mapped[str] = mapped_column(String(20), default="ACTIVE")
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    released_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    release_reason: Mapped[str | None] = mapped_column(String(200), nullable=True)


class Sale(TenantMixin, Base):
    __tablename__ = "sales"
    references_company = False
    __table_args__ = (
        _customer_fk(),
        # One sale per receipt id, ever.
        UniqueConstraint("company_id", "external_receipt_id"),
        UniqueConstraint("company_id", "checkout_session_id"),
        # A customer's sales in the tier window (app.services.rewards.spend).
        Index("ix_sales_customer_committed", "company_id", "customer_id", "committed_at"),
        # The reports' sales of a period (migration 0016_report_indexes).
        Index("ix_sales_company_committed", "company_id", "committed_at"),
    )

    # Null on a sale made offline (sent later, without a session or a quote).
    checkout_session_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    external_receipt_id: Mapped[str] = mapped_column(String(128))
    customer_id: Mapped[str] = mapped_column(String(36))
    quote_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    state: Mapped[str] = mapped_column(String(30), default=COMMITTED)
    total_amount: Mapped[int] = mapped_column(Money)
    redeemed: Mapped[int] = mapped_column(Money)
    accrued: Mapped[int] = mapped_column(Money)
    accrual_available_at: Mapped[datetime] = mapped_column(UtcDateTime)
    # When the sale was made, what the tier window and the reports count it by: its commit,
    # or an offline sale's `soldAt`. An offline sale's `created_at` is when the service
    # received it (its `committedAt`); an online sale's is its commit.
    committed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    # An offline sale's register, which an online sale reaches through its session.
    terminal_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    store_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    cashier_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # What the sale adds to the customer's tier spend now (docs/api.md#tiers): Σ per line of
    # floor((amount − discount) × (quantity − returned) / quantity).
    spend: Mapped[int] = mapped_column(Money, default=0)
    # When the earliest lot the redemption took from expires (null: none of them does): a
    # return's restored redemption expires then (docs/api.md#expiry).
    redemption_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # JSON list of the lines printed on the receipt at commit (the balance then, not now).
    receipt_text: Mapped[str | None] = mapped_column(Text, nullable=True)


class SaleLine(Base):
    __tablename__ = "sale_lines"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "sale_id"], ["sales.company_id", "sales.id"]),
        # The program report's campaign lines (migration 0016_report_indexes).
        Index("ix_sale_lines_campaign", "company_id", "campaign_id",
              postgresql_include=["sale_id", "accrual"],
              postgresql_where=text("campaign_id IS NOT NULL"),
              sqlite_where=text("campaign_id IS NOT NULL")),
    )

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    sale_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    line_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    sku: Mapped[str | None] = mapped_column(String(64), nullable=True)
    name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    quantity: Mapped[int] = mapped_column(Money)  # thousandths
    amount: Mapped[int] = mapped_column(Money)
    discount: Mapped[int] = mapped_column(Money)
    accrual: Mapped[int] = mapped_column(Money)
    returned_quantity: Mapped[int] = mapped_column(Money, default=0)
    restored_redemption: Mapped[int] = mapped_column(Money, default=0)
    reversed_accrual: Mapped[int] = mapped_column(Money, default=0)
    # The line's accrual percent and the campaign that gave it (null: the customer's own);
    # null percent on sales committed before percents were kept per line.
    accrual_bp: Mapped[int | None] = mapped_column(Integer, nullable=True)
    campaign_id: Mapped[str | None] = mapped_column(String(36), nullable=True)


class Return(TenantMixin, Base):
    __tablename__ = "returns"
    references_company = False
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "sale_id"], ["sales.company_id", "sales.id"]),
        Index("ix_returns_sale", "company_id", "sale_id"),
        Index("ix_returns_company_created", "company_id", "created_at"),  # the reports'
    )

    sale_id: Mapped[str] = mapped_column(String(36))
    lines: Mapped[str] = mapped_column(Text)  # JSON of the per-line shares
    restored_redemption: Mapped[int] = mapped_column(Money)
    reversed_accrual: Mapped[int] = mapped_column(Money)
    forgiven_accrual: Mapped[int] = mapped_column(Money)
