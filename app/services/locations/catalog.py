"""Each store's product catalog: the register sends its complete snapshot and we reconcile.

The snapshot goes into a temporary table in one bulk load (COPY on PostgreSQL), and four
set statements do the rest: delete what is absent, update what differs, insert what is new,
all in the request's transaction. Nothing is done row by row, so 100,000 items take about
as long as the database needs to write what changed.
"""
from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import (BigInteger, Boolean, Column, Index, MetaData, String, Table, and_,
                        bindparam, delete, exists, insert, or_, select, update)
from sqlalchemy.orm import Session
from sqlalchemy.schema import CreateIndex, CreateTable, DropTable

from app.database.engine import UtcDateTime
from app.models import CatalogItem, CatalogSync, Store
from app.services.errors import InvalidField, NotFound
from app.services.webhooks.outbox import record_event
from app.wire import format_timestamp

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
    Column("sku", String(64), nullable=False),
    Column("name", String(255), nullable=False),
    Column("price", BigInteger, nullable=False),
    Column("barcode", String(64)),
    Column("category", String(255)),
    Column("redeemable", Boolean, nullable=False),
    Column("accruable", Boolean, nullable=False),
    prefixes=["TEMPORARY"],
)
# SQLite joins by probing an index; built after the load (one sort, not n insertions).
snapshot_sku = Index("catalog_snapshot_sku", snapshot.c.sku, unique=True)
RECONCILE_SETTINGS = "SET LOCAL enable_nestloop = off; SET LOCAL work_mem = '32MB'"
DEFAULT_SETTINGS = "SET LOCAL enable_nestloop TO DEFAULT; SET LOCAL work_mem TO DEFAULT"
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
    _drop_snapshot(session)
    sync = CatalogSync(company_id=company_id, store_id=store_id, received=len(entries),
                       created=created, updated=updated, removed=removed,
                       unchanged=len(entries) - created - updated, created_at=now)
    session.add(sync)
    session.flush()
    record_event(session, company_id, "catalog.synced", sync_as_json(sync))
    return sync


def sync_as_json(sync: CatalogSync) -> dict:
    """The sync as CatalogSyncResponse shows it."""
    return {"id": sync.id, "storeId": sync.store_id, "received": sync.received,
            "created": sync.created, "updated": sync.updated, "removed": sync.removed,
            "unchanged": sync.unchanged, "syncedAt": format_timestamp(sync.created_at)}


def _check_snapshot(entries: Sequence[CatalogEntry], allow_empty: bool) -> None:
    if not entries and not allow_empty:
        raise InvalidField(["body", "items"],
                           "an empty snapshot removes every product; send allowEmpty: true to mean it",
                           "empty_snapshot")
    if len(entries) > MAX_ITEMS:
        raise InvalidField(["body", "items"], f"at most {MAX_ITEMS} items", "too_long")
    if len({entry.sku for entry in entries}) == len(entries):
        return
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
    connection = session.connection()
    driver = connection.connection.driver_connection
    if connection.dialect.name == "postgresql":
        with driver.cursor() as cursor:
            cursor.copy_expert(f"COPY catalog_snapshot ({', '.join(FIELDS)}) FROM STDIN",
                               _copy_text(entries))
            # Neither the fresh snapshot nor a freshly synced catalog has statistics yet, and
            # the planner, taking them for tiny, would join them by a nested loop: a scan of
            # one side per row of the other. Hash joins read each side once, in memory.
            cursor.execute(RECONCILE_SETTINGS)
    else:
        placeholders = ", ".join("?" for _ in FIELDS)
        driver.executemany(f"INSERT INTO catalog_snapshot VALUES ({placeholders})", entries)
        session.execute(CreateIndex(snapshot_sku))


def _drop_snapshot(session: Session) -> None:
    session.execute(DropTable(snapshot))
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        with connection.connection.driver_connection.cursor() as cursor:
            cursor.execute(DEFAULT_SETTINGS)


def _copy_rows(entries: Sequence[CatalogEntry], text: Callable[[str], str]) -> str:
    null, flag = "\\N", {True: "t", False: "f"}
    return "".join([
        f"{text(e.sku)}\t{text(e.name)}\t{e.price}\t"
        f"{null if e.barcode is None else text(e.barcode)}\t"
        f"{null if e.category is None else text(e.category)}\t"
        f"{flag[e.redeemable]}\t{flag[e.accruable]}\n" for e in entries])


def _escaped(value: str) -> str:
    return (value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def _copy_text(entries: Sequence[CatalogEntry]) -> io.StringIO:
    """The snapshot in COPY's text format: tab-separated, \\N for null. Escaping every field
    costs a second on 100,000 items, so the rows are joined as they are and escaped only when
    counting over the whole text shows that some field holds a backslash, tab or line break."""
    raw = _copy_rows(entries, str)
    nulls = sum((e.barcode is None) + (e.category is None) for e in entries)  # one \\ each
    if (raw.count("\\") != nulls or "\r" in raw or raw.count("\t") != 6 * len(entries)
        or raw.count("\n") != len(entries)):
        raw = _copy_rows(entries, _escaped)
    return io.StringIO(raw)
