"""Customers, their reward account, the immutable ledger, and OTP challenges."""
from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import (Date, ForeignKeyConstraint, Index, Integer, String, UniqueConstraint,
                        text)
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime, utcnow
from app.models.base import Money, TenantMixin


class Customer(TenantMixin, Base):
    __tablename__ = "customers"
    __table_args__ = (
        UniqueConstraint("company_id", "phone"),
        UniqueConstraint("company_id", "card_number"),
        # The card page is reached by its token alone.
        Index("ix_customers_card_token", "card_token"),
        Index("ix_customers_company_created", "company_id", "created_at"),
    )

    phone: Mapped[str] = mapped_column(String(16))  # E.164, +7XXXXXXXXXX
    first_name: Mapped[str] = mapped_column(String(100))
    last_name: Mapped[str | None] = mapped_column(String(100), nullable=True)
    birth_date: Mapped[date | None] = mapped_column(Date, nullable=True)
    email: Mapped[str | None] = mapped_column(String(254), nullable=True)
    card_number: Mapped[str] = mapped_column(String(13))
    card_token: Mapped[str] = mapped_column(String(64))


class CustomerName(Base):
    """What the directory's name search reads: each customer's lower-cased "first last" and
    enrolment time, one narrow row per customer (written with the customer by
    `app.services.customers.profiles.record_names`). Searching the wide customers row instead reads
    several times more pages per match; on PostgreSQL a trigram index on `full_name`
    (migration 0008_customer_names) finds the candidates. Keyed by the card number, the
    customer's other unique key, 13 characters against the id's 36: the table is a sixth
    smaller, and more of it stays in the database's cache (docs/decisions.md, customers)."""

    __tablename__ = "customer_names"
    __table_args__ = (ForeignKeyConstraint(["company_id", "card_number"],
                                           ["customers.company_id", "customers.card_number"]),)

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    card_number: Mapped[str] = mapped_column(String(13), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)  # the customer's: the page order
    full_name: Mapped[str] = mapped_column(String(201))


class RewardAccount(Base):
    """Balances in kopecks. Changed only together with a ledger entry, under a row lock."""

    __tablename__ = "reward_accounts"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "customer_id"], ["customers.company_id", "customers.id"]),
        Index("ix_reward_accounts_available", "company_id", "available"),
        Index("ix_reward_accounts_spend_oldest", "company_id", "spend_oldest_at"),
        Index("ix_reward_accounts_spend_window", "company_id", "spend_window_version"),
        Index("ix_reward_accounts_birthday", "birthday_due_on"),
        # The wallet push sweep's "changed since" (app.services.cards.pass_pushes.mark_stale).
        Index("ix_reward_accounts_updated", "updated_at"),
        # The periodic job's candidates (docs/api.md#expiry): only accounts with lots to watch.
        Index("ix_reward_accounts_expiry", "next_expiry_at",
              postgresql_where=text("next_expiry_at IS NOT NULL"),
              sqlite_where=text("next_expiry_at IS NOT NULL")),
        Index("ix_reward_accounts_reminder", "next_reminder_at",
              postgresql_where=text("next_reminder_at IS NOT NULL"),
              sqlite_where=text("next_reminder_at IS NOT NULL")),
    )

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    available: Mapped[int] = mapped_column(Money, default=0)
    pending: Mapped[int] = mapped_column(Money, default=0)
    reserved: Mapped[int] = mapped_column(Money, default=0)
    # Earliest availableAt among PENDING entries: maturing on touch costs nothing until then.
    next_maturity_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # Earliest expiresAt among lots with points left, and earliest reward.expiring still to
    # send: expiring and reminding on touch cost nothing until then (docs/api.md#expiry).
    next_expiry_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    next_reminder_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    # The tier's spend (docs/api.md#tiers), kept as sales are committed and returned, and the
    # oldest sale it counts: once that leaves the window the spend is recomputed
    # (app.services.rewards.spend).
    spend: Mapped[int] = mapped_column(Money, default=0)
    spend_oldest_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # The program's tier_window_version the spend was counted for.
    spend_window_version: Mapped[int] = mapped_column(Integer, default=0)
    # The Moscow date the next birthday bonus is due (null without a birth date).
    birthday_due_on: Mapped[date | None] = mapped_column(Date, nullable=True)


class LedgerEntry(TenantMixin, Base):
    """Immutable but for status: PENDING entries mature to ACTIVE at `available_at`."""

    __tablename__ = "ledger_entries"
    references_company = False
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "customer_id"], ["customers.company_id", "customers.id"]),
        Index("ix_ledger_entries_customer", "company_id", "customer_id", "created_at"),
        # The ledger report's movements of a period and what matured in it (migration
        # 0016_report_indexes): the sums come from the index alone on PostgreSQL.
        Index("ix_ledger_entries_company_created", "company_id", "created_at",
              postgresql_include=["type", "amount"]),
        Index("ix_ledger_entries_matured", "company_id", "available_at",
              postgresql_include=["status", "amount"],
              postgresql_where=text("available_at > created_at"),
              sqlite_where=text("available_at > created_at")),
    )

    customer_id: Mapped[str] = mapped_column(String(36))
    type: Mapped[str] = mapped_column(String(30))
    amount: Mapped[int] = mapped_column(Money)  # signed kopecks
    status: Mapped[str] = mapped_column(String(20))
    available_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    basis: Mapped[str | None] = mapped_column(String(500), nullable=True)
    sale_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    return_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    hold_id: Mapped[str | None] = mapped_column(String(36), nullable=True)


class RewardLot(Base):
    """A credit's points and when they expire (docs/api.md#expiry): spending takes from the lot that
    expires first. A lot's id is its credit's ledger entry id (a balance brought forward by
    migration 0011 has the customer's id). Only `remaining` and `remind_at` ever change."""

    __tablename__ = "reward_lots"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "customer_id"], ["customers.company_id", "customers.id"]),
        # What a touch reads: the account's lots with points left, in spending order
        # (app.services.rewards.lots.OPEN_LOTS), so its first page is read from the index
        # without the customer's other open lots (migration 0019_lots_in_spending_order).
        Index("ix_reward_lots_spending", "company_id", "customer_id", "expires_at", "created_at",
              "id", postgresql_where=text("remaining > 0"), sqlite_where=text("remaining > 0")),
    )

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(36))
    # The sale of an accrual's lot: a reversal of that sale takes from it first.
    sale_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    amount: Mapped[int] = mapped_column(Money)
    remaining: Mapped[int] = mapped_column(Money)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # When reward.expiring is due; null once sent, or when the program sends none.
    remind_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class OtpChallenge(TenantMixin, Base):
    __tablename__ = "otp_challenges"
    __table_args__ = (Index("ix_otp_challenges_phone", "company_id", "phone", "created_at"),)

    phone: Mapped[str] = mapped_column(String(16))
    purpose: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(20), default="PENDING")
    code_hash: Mapped[str] = mapped_column(String(200))  # argon2id
    attempts_left: Mapped[int] = mapped_column(Integer, default=5)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    resend_available_at: Mapped[datetime] = mapped_column(UtcDateTime)
    confirmed_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
