"""Each store's product catalog: the register sends its complete snapshot and we reconcile.

The snapshot goes into a temporary table in one bulk load (COPY on PostgreSQL), and four
set statements do the rest: delete what is absent, update what differs, insert what is new,
all in the request's transaction. Nothing is done row by row, so 100,000 items take about
as long as the database needs to write what changed.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import (BigInteger, Boolean, Column, MetaData, String, Table, and_, bindparam,
                        delete, exists, insert, or_, select, update)
from sqlalchemy.orm import Session
from sqlalchemy.schema import CreateTable, DropTable

from app.db import UtcDateTime
from app.models import CatalogItem, CatalogSync, Store
from app.services.errors import InvalidField, NotFound

MAX_ITEMS = 100_000


class CatalogEntry(NamedTuple):
    """One product of a snapshot, as validated at the boundary (price in kopecks)."""

    sku: str
    name: str
    price: int
    barcode: str | None = None
    category: str | None = None
    redeemable: bool = True
    accruable: bool = True


FIELDS = CatalogEntry._fields
COMPARED = FIELDS[1:]

snapshot = Table(
    "catalog_snapshot", MetaData(),
    Column("sku", String(64), primary_key=True),
    Column("name", String(255), nullable=False),
    Column("price", BigInteger, nullable=False),
    Column("barcode", String(64)),
    Column("category", String(255)),
    Column("redeemable", Boolean, nullable=False),
    Column("accruable", Boolean, nullable=False),
    prefixes=["TEMPORARY"],
)
items = CatalogItem.__table__
# Parameter names differ from column names: SQLAlchemy keeps those for SET and VALUES.
_company, _store = bindparam("for_company", type_=String()), bindparam("for_store", type_=String())
_in_store = and_(items.c.company_id == _company, items.c.store_id == _store)
_listed = exists().where(snapshot.c.sku == items.c.sku)
_now = bindparam("synced_at", type_=UtcDateTime())

REMOVE_ABSENT = delete(items).where(_in_store, ~_listed)
UPDATE_CHANGED = (
    update(items)
    .where(_in_store, items.c.sku == snapshot.c.sku,
           or_(*(items.c[name].is_distinct_from(snapshot.c[name]) for name in COMPARED)))
    .values({**{name: snapshot.c[name] for name in COMPARED}, "updated_at": _now})
)
INSERT_NEW = insert(items).from_select(
    ["company_id", "store_id", *FIELDS, "updated_at"],
    select(_company, _store, *(snapshot.c[name] for name in FIELDS), _now)
    .where(~exists().where(_in_store, items.c.sku == snapshot.c.sku)),
)


def sync_catalog(session: Session, company_id: str, store_id: str,
                 entries: Sequence[CatalogEntry], *, allow_empty: bool,
                 now: datetime) -> CatalogSync:
    """Make the store's catalog exactly `entries`: listed items created or updated, absent
    ones removed. Returns the sync with its counts (only flushed: the caller commits)."""
    _check_snapshot(entries, allow_empty)
    _lock_store(session, company_id, store_id)
    _load_snapshot(session, entries)
    params = {"for_company": company_id, "for_store": store_id, "synced_at": now}
    removed = session.execute(REMOVE_ABSENT, params).rowcount
    updated = session.execute(UPDATE_CHANGED, params).rowcount
    created = session.execute(INSERT_NEW, params).rowcount
    session.execute(DropTable(snapshot))
    sync = CatalogSync(company_id=company_id, store_id=store_id, received=len(entries),
                       created=created, updated=updated, removed=removed,
                       unchanged=len(entries) - created - updated, created_at=now)
    session.add(sync)
    session.flush()
    return sync


def _check_snapshot(entries: Sequence[CatalogEntry], allow_empty: bool) -> None:
    if not entries and not allow_empty:
        raise InvalidField(["body", "items"],
                           "an empty snapshot removes every product; send allowEmpty: true to mean it",
                           "empty_snapshot")
    if len(entries) > MAX_ITEMS:
        raise InvalidField(["body", "items"], f"at most {MAX_ITEMS} items", "too_long")
    first_seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        seen = first_seen.setdefault(entry.sku, index)
        if seen != index:
            raise InvalidField(["body", "items", index, "sku"],
                               f"sku {entry.sku!r} is already listed at items[{seen}]",
                               "duplicate_sku")


def _lock_store(session: Session, company_id: str, store_id: str) -> None:
    """Syncs of one store take turns. FOR NO KEY UPDATE: registers opening sessions at the
    store (foreign keys to it) are never kept waiting by a sync."""
    found = session.scalar(select(Store.id).where(Store.company_id == company_id,
                                                  Store.id == store_id)
                           .with_for_update(key_share=True))
    if found is None:
        raise NotFound("store")


def _load_snapshot(session: Session, entries: Sequence[CatalogEntry]) -> None:
    session.execute(DropTable(snapshot, if_exists=True))
    session.execute(CreateTable(snapshot))
    if not entries:
        return
    connection = session.connection()
    driver = connection.connection.driver_connection
    if connection.dialect.name == "postgresql":
        with driver.cursor() as cursor:
            cursor.copy_expert(f"COPY catalog_snapshot ({', '.join(FIELDS)}) FROM STDIN",
                               _copy_text(entries))
            cursor.execute("ANALYZE catalog_snapshot")
    else:
        placeholders = ", ".join("?" for _ in FIELDS)
        driver.executemany(f"INSERT INTO catalog_snapshot VALUES ({placeholders})", entries)


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_value(value) -> str:
    if value is None:
        return "\\N"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, int):
        return str(value)
    return value.translate(_COPY_ESCAPES)


def _copy_text(entries: Sequence[CatalogEntry]) -> io.StringIO:
    """The snapshot in COPY's text format: tab-separated, \\N for null, specials escaped."""
    return io.StringIO("".join(
        "\t".join(map(_copy_value, entry)) + "\n" for entry in entries))

