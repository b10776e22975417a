"""Catalog sync of a 100,000-item snapshot on PostgreSQL: the first sync of a store, a
re-sync where 1 % changed, and a re-sync where nothing did.

Two measurements on a fresh database built by the migrations:

- the service (`catalog.sync_catalog` and the commit) against PostgreSQL, each scenario on
  a few stores, median and worst reported;
- one full HTTP request of the same snapshots under gunicorn (JSON parse, item validation,
  idempotency fingerprint, reconciliation, commit), timed by the client.

Targets on a 2-core machine: first sync < 10 s, 1 %-changed re-sync < 3 s. Run on demand:

    .venv/bin/python bench/catalog_sync.py [--items 100000] [--stores 3]
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import select  # noqa: E402

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.models import Company  # noqa: E402
from app.services.locations import catalog, stores  # noqa: E402
from app.services.locations.catalog import CatalogEntry  # noqa: E402
from harness import PEPPER, bench_database, flask_command, gunicorn  # noqa: E402

CATEGORIES = ["Dairy", "Bakery", "Drinks", "Frozen", "Household", "Snacks", "Fruit", "Meat"]
BODY_LIMIT = 64 * 1024 * 1024  # a 100,000-item snapshot is near the 16 MiB default


def snapshot(count: int) -> list[CatalogEntry]:
    return [CatalogEntry(f"SKU-{i:07d}", f"Product {i} {CATEGORIES[i % 8].lower()} 500 g",
                         1000 + (i * 37) % 500_000, f"46{i:011d}", CATEGORIES[i % 8],
                         i % 10 != 0, i % 25 != 0)
            for i in range(count)]


def one_percent_changed(entries: list[CatalogEntry]) -> list[CatalogEntry]:
    """1 % of the snapshot differs: 0.6 % repriced or re-flagged, 0.2 % gone, 0.2 % new."""
    changed = []
    for i, entry in enumerate(entries):
        if i % 500 in (0, 100):
            changed.append(entry._replace(price=entry.price + 100))
        elif i % 500 == 300:
            changed.append(entry._replace(redeemable=not entry.redeemable))
        elif i % 500 != 400:
            changed.append(entry)  # i % 500 == 400: removed
    gone = len(entries) - len(changed)
    changed.extend(CatalogEntry(f"NEW-{i:07d}", f"New product {i}", 4990) for i in range(gone))
    return changed


def as_json(entries: list[CatalogEntry]) -> list[dict]:
    return [{"sku": e.sku, "name": e.name, "price": f"{e.price // 100}.{e.price % 100:02d}",
             "barcode": e.barcode, "category": e.category, "redeemable": e.redeemable,
             "accruable": e.accruable} for e in entries]


def timed_sync(app, company_id, store_id, entries) -> tuple[float, tuple]:
    session = app.extensions["session_factory"]()
    try:
        started = time.perf_counter()
        result = catalog.sync_catalog(session, company_id, store_id, entries, allow_empty=False,
                                      now=utcnow())
        session.commit()
        elapsed = time.perf_counter() - started
        return elapsed, (result.created, result.updated, result.removed, result.unchanged)
    finally:
        session.close()


def new_store(app, company_id) -> str:
    session = app.extensions["session_factory"]()
    store = stores.create_store(session, company_id, name=f"Bench {uuid.uuid4().hex[:6]}",
                                address="Lenina 1", city="Moscow", latitude=55.7,
                                longitude=37.6, channels=[], timezone="Europe/Moscow",
                                now=utcnow())
    session.commit()
    session.close()
    return store.id


def report(name: str, runs: list[tuple[float, tuple]]) -> None:
    seconds = [elapsed for elapsed, _ in runs]
    created, updated, removed, unchanged = runs[0][1]
    print(json.dumps({"scenario": name, "runs": len(runs),
                      "median_s": round(statistics.median(seconds), 3),
                      "worst_s": round(max(seconds), 3),
                      "counts": {"created": created, "updated": updated, "removed": removed,
                                 "unchanged": unchanged}}))


def http_sync(port: int, key: str, store_id: str, entries: list[CatalogEntry]) -> dict:
    payload = json.dumps({"storeId": store_id, "items": as_json(entries)}).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.perf_counter()
    connection.request("POST", "/v1/catalog-syncs", body=payload, headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/json",
        "Idempotency-Key": uuid.uuid4().hex})
    response = connection.getresponse()
    body = json.loads(response.read())
    elapsed = time.perf_counter() - started
    connection.close()
    return {"status": response.status, "seconds": round(elapsed, 3),
            "body_mb": round(len(payload) / 2**20, 2),
            "counts": {k: body.get(k) for k in ("created", "updated", "removed", "unchanged")}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--stores", type=int, default=3)
    args = parser.parse_args()
    first = snapshot(args.items)
    second = one_percent_changed(first)

    with bench_database() as url:
        key = flask_command(url, "demo")
        app = create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                                  development=False))
        with app.app_context():
            session = app.extensions["session_factory"]()
            company_id = session.scalar(select(Company.id))
            session.close()
            made = [new_store(app, company_id) for _ in range(args.stores)]
            report("service: first sync", [timed_sync(app, company_id, s, first) for s in made])
            report("service: re-sync, 1 % changed",
                   [timed_sync(app, company_id, s, second) for s in made])
            report("service: re-sync, nothing changed",
                   [timed_sync(app, company_id, s, second) for s in made])
            http_store = new_store(app, company_id)
        app.extensions["engine"].dispose()

        with gunicorn(url, workers=2, MAX_CONTENT_LENGTH=str(BODY_LIMIT)) as port:
            print(json.dumps({"scenario": "HTTP: first sync", **http_sync(port, key, http_store, first)}))
            # Back and forth between the two snapshots: each request changes 1 %.
            for entries in (second, first, second):
                print(json.dumps({"scenario": "HTTP: re-sync, 1 % changed",
                                  **http_sync(port, key, http_store, entries)}))


if __name__ == "__main__":
    main()
