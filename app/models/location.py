"""Stores, terminals (registers), the cashier catalog and each store's product catalog."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (Boolean, Float, ForeignKeyConstraint, Index, Integer, String,
                        UniqueConstraint)
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime, utcnow
from app.models.base import Money, TenantMixin


class Store(TenantMixin, Base):
    __tablename__ = "stores"

    name: Mapped[str] = mapped_column(String(200))
    address: Mapped[str] = mapped_column(String(500))
    city: Mapped[str] = mapped_column(String(120))
    latitude: Mapped[float] = mapped_column(Float)
    longitude: Mapped[float] = mapped_column(Float)
    channels: Mapped[str] = mapped_column(String(100), default="")  # space-separated
    timezone: Mapped[str] = mapped_column(String(64), default="Europe/Moscow")
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class Terminal(TenantMixin, Base):
    __tablename__ = "terminals"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "store_id"], ["stores.company_id", "stores.id"]),
        UniqueConstraint("company_id", "pos_key"),
        Index("ix_terminals_company_store", "company_id", "store_id"),
    )

    store_id: Mapped[str] = mapped_column(String(36))
    name: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(20), default="ACTIVE")
    pos_key: Mapped[str | None] = mapped_column(String(128), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class Cashier(TenantMixin, Base):
    """Safe data only: no PIN, phone or tax number column exists, by design."""

    __tablename__ = "cashiers"
    __table_args__ = (UniqueConstraint("company_id", "external_id"),)

    external_id: Mapped[str] = mapped_column(String(128))
    name: Mapped[str] = mapped_column(String(200))


class CatalogItem(Base):
    __tablename__ = "catalog_items"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "store_id"], ["stores.company_id", "stores.id"]),
    )

    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)  # the store's company
    store_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    sku: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    price: Mapped[int] = mapped_column(Money)
    barcode: Mapped[str | None] = mapped_column(String(64), nullable=True)
    category: Mapped[str | None] = mapped_column(String(255), nullable=True)
    redeemable: Mapped[bool] = mapped_column(Boolean, default=True)
    accruable: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class CatalogSync(TenantMixin, Base):
    __tablename__ = "catalog_syncs"
    __table_args__ = (
        ForeignKeyConstraint(["company_id", "store_id"], ["stores.company_id", "stores.id"]),
    )

    store_id: Mapped[str] = mapped_column(String(36))
    received: Mapped[int] = mapped_column(Integer)
    created: Mapped[int] = mapped_column(Integer)
    updated: Mapped[int] = mapped_column(Integer)
    removed: Mapped[int] = mapped_column(Integer)
    unchanged: Mapped[int] = mapped_column(Integer)
