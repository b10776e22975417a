"""The back office's reports (docs/api.md#reports) at scale, on PostgreSQL: one company with
`--customers` customers (1,000,000 by default), `--sales` sales of 5 lines each over the last
year (1,000,000: 5,000,000 lines) and `--entries` ledger entries (10,000,000), 3 % of the sales
returned, 5 % of the lines under a campaign.

Seeds inside the database (INSERT … SELECT over generate_series, in chunks of a million, each
its own transaction, `synchronous_commit` off: nothing crosses the wire row by row) into the
big tables stripped of their keys, indexes and foreign keys, which are then built back from
their own definitions as the migrations left them (random md5 keys make every row of a loaded
index a random page write: 7,000 rows/s, against one sort per index after), then VACUUM ANALYZE. Then times each report over the last 31 Moscow days through the app (Flask's
client, one request at a time, `--repeat` times, best and worst), and the registers report over
366 days as CSV by cashier and by day, reading the streamed body, with the process's peak
memory (tracemalloc) during each.

With `--rounds N`, then 16 registers (bench/checkout.py's stream: open, quote, hold, commit,
against gunicorn, a company of their own in the same database) for `--seconds` each, N times
without the reports' indexes and N times with them, alternating, the load average beside each;
and last the reports timed again while the 16 registers run. `--database` reuses a database
a run kept (`--keep`) instead of seeding one.

Target: each 31-day report within 2 s; the registers' checkouts/s within 5 % with the indexes.

    .venv/bin/python bench/reports.py [--customers 1000000] [--sales 1000000]
                                      [--entries 10000000] [--repeat 3] [--keep]
                                      [--database NAME] [--rounds 2] [--seconds 20]
                                      [--pause-ms 50] [--indexes NAME,…|none]
                                      [--as-before] [--warm-up 5]

`--as-before` makes "without" the schema as it was before the reports (0015): the five dropped,
and migration 0019's changes undone (the old open-lots index, the ledger's maturing index), so
the rounds compare what the registers did then with what they do now.
"""
from __future__ import annotations

import argparse
import os
import threading
import time
import tracemalloc
from contextlib import nullcontext
from datetime import timedelta

from harness import PEPPER, SERVER_URL, bench_database, gunicorn  # repository on sys.path
from sqlalchemy import text  # noqa: E402

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.models import Cashier, Store, Terminal  # noqa: E402
from app.services.reports.periods import moscow_day  # noqa: E402
from app.services.tenancy import companies, credentials  # noqa: E402
from app.services.tenancy.scopes import ALL_SCOPES  # noqa: E402

import checkout  # noqa: E402  (bench/checkout.py)

TERMINALS, CASHIERS, CHUNK = 16, 200, 1_000_000
# The reports' own indexes (migrations 0016 and 0018), dropped and built back between rounds.
REPORT_INDEXES = ("ix_sales_company_committed", "ix_ledger_entries_company_created",
                  "ix_ledger_entries_matured", "ix_returns_company_created",
                  "ix_sale_lines_campaign")
# What 0019 (lots in spending order) replaced: `--as-before` builds them back for "without".
BEFORE_0019 = {
    "ix_reward_lots_open": "CREATE INDEX ix_reward_lots_open ON reward_lots "
                           "(company_id, customer_id) WHERE remaining > 0",
    "ix_ledger_entries_maturing": "CREATE INDEX ix_ledger_entries_maturing ON ledger_entries "
                                  "(status, available_at)"}
BIG_TABLES = ("customers", "reward_accounts", "reward_lots", "checkout_sessions", "sales",
              "sale_lines", "ledger_entries", "returns")
# md5 of a tag and a number, shaped as a uuid: ids the statements can recompute.
ID = "md5('{tag}' || {n})::uuid::text"

CUSTOMERS = f"""
INSERT INTO customers (company_id, id, created_at, phone, first_name, card_number, card_token)
SELECT :company, {ID.format(tag='c', n='i')}, :now - (i % 400) * interval '1 day',
       '+7' || lpad(i::text, 10, '0'), 'Bench', '2' || lpad(i::text, 12, '0'), 't' || i
FROM generate_series(:low, :high) AS i"""
ACCOUNTS = f"""
INSERT INTO reward_accounts (company_id, customer_id, available, pending, reserved, updated_at,
                             spend, spend_window_version)
SELECT :company, {ID.format(tag='c', n='i')}, 100000 + i % 5000, 0, 0, :now, (i % 700) * 1000, 0
FROM generate_series(:low, :high) AS i"""
LOTS = f"""
INSERT INTO reward_lots (company_id, id, customer_id, amount, remaining, expires_at, created_at)
SELECT :company, {ID.format(tag='c', n='i')}, {ID.format(tag='c', n='i')}, 100000 + i % 5000,
       100000 + i % 5000, CASE WHEN i % 10 = 0 THEN NULL
                               ELSE :now + (i % 540) * interval '1 day' END, :now
FROM generate_series(:low, :high) AS i"""
# Sale j: customer j % customers, terminal j % 16, cashier j % 200, committed j % 365 days ago.
SESSIONS = f"""
INSERT INTO checkout_sessions (company_id, id, created_at, external_receipt_id, customer_id,
                               terminal_id, store_id, cashier_id, state, expires_at)
SELECT :company, {ID.format(tag='s', n='j')}, :now - (j % 365) * interval '1 day',
       'R-' || j, {ID.format(tag='c', n='(j % :customers) + 1')},
       (:terminals)[j % 16 + 1], (:stores)[j % 16 / 4 + 1], (:cashiers)[j % 200 + 1],
       'COMMITTED', :now
FROM generate_series(:low, :high) AS j"""
SALES = f"""
INSERT INTO sales (company_id, id, created_at, checkout_session_id, external_receipt_id,
                   customer_id, quote_id, state, total_amount, redeemed, accrued,
                   accrual_available_at, committed_at, spend)
SELECT :company, {ID.format(tag='s', n='j')}, at, {ID.format(tag='s', n='j')}, 'R-' || j,
       {ID.format(tag='c', n='(j % :customers) + 1')}, {ID.format(tag='q', n='j')},
       'COMMITTED', 50000, CASE WHEN j % 3 = 0 THEN 5000 ELSE 0 END,
       CASE WHEN j % 3 = 0 THEN 2250 ELSE 2500 END, at + interval '14 days', at,
       CASE WHEN j % 3 = 0 THEN 45000 ELSE 50000 END
FROM generate_series(:low, :high) AS j,
     LATERAL (SELECT :now - (j % 365) * interval '1 day' - (j % 86400) * interval '1 second') AS t(at)"""
LINES = f"""
INSERT INTO sale_lines (company_id, sale_id, line_id, position, sku, name, quantity, amount,
                        discount, accrual, returned_quantity, restored_redemption,
                        reversed_accrual, accrual_bp, campaign_id)
SELECT :company, {ID.format(tag='s', n='j')}, n::text, n, 'SKU-' || n, 'Item', 1000, 10000,
       CASE WHEN j % 3 = 0 THEN 1000 ELSE 0 END, CASE WHEN j % 3 = 0 THEN 450 ELSE 500 END,
       0, 0, 0, 500, CASE WHEN (j + n) % 20 = 0 THEN (:campaigns)[(j % 3) + 1] END
FROM generate_series(:low, :high) AS j, generate_series(1, 5) AS n"""
# Each sale's accrual (born pending for 14 days; matured once that has passed) and, every
# third sale, its redemption; then the rest of the entries: adjustments, bonuses, expiries.
SALE_ENTRIES = f"""
INSERT INTO ledger_entries (company_id, id, created_at, customer_id, type, amount, status,
                            available_at, sale_id)
SELECT :company, {ID.format(tag='a', n='j')}, at, {ID.format(tag='c', n='(j % :customers) + 1')},
       'ACCRUAL', 2500, CASE WHEN at + interval '14 days' <= :now THEN 'ACTIVE' ELSE 'PENDING' END,
       at + interval '14 days', {ID.format(tag='s', n='j')}
FROM generate_series(:low, :high) AS j,
     LATERAL (SELECT :now - (j % 365) * interval '1 day' - (j % 86400) * interval '1 second') AS t(at)
UNION ALL
SELECT :company, {ID.format(tag='r', n='j')}, at, {ID.format(tag='c', n='(j % :customers) + 1')},
       'REDEMPTION', -5000, 'ACTIVE', at, {ID.format(tag='s', n='j')}
FROM generate_series(:low, :high) AS j,
     LATERAL (SELECT :now - (j % 365) * interval '1 day' - (j % 86400) * interval '1 second') AS t(at)
WHERE j % 3 = 0"""
OTHER_ENTRIES = f"""
INSERT INTO ledger_entries (company_id, id, created_at, customer_id, type, amount, status,
                            available_at)
SELECT :company, {ID.format(tag='o', n='k')}, at, {ID.format(tag='c', n='(k % :customers) + 1')},
       (ARRAY['ADJUSTMENT', 'BONUS', 'EXPIRY', 'ADJUSTMENT'])[k % 4 + 1],
       CASE WHEN k % 4 = 2 THEN -700 ELSE 1000 END, 'ACTIVE', at
FROM generate_series(:low, :high) AS k,
     LATERAL (SELECT :now - (k % 365) * interval '1 day' - (k % 86400) * interval '1 second') AS t(at)"""
RETURNS = f"""
INSERT INTO returns (company_id, id, created_at, sale_id, lines, restored_redemption,
                     reversed_accrual, forgiven_accrual)
SELECT :company, {ID.format(tag='x', n='j')}, at + interval '1 hour', {ID.format(tag='s', n='j')},
       :return_lines, 0, 500, 0
FROM generate_series(:low, :high) AS j,
     LATERAL (SELECT :now - (j % 365) * interval '1 day' - (j % 86400) * interval '1 second') AS t(at)
WHERE j % 33 = 0"""


def _app(url: str):
    return create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                               development=False))


def seed(app, customers: int, sales: int, entries: int) -> tuple[str, str]:
    session = app.extensions["session_factory"]()
    now = utcnow()
    company = companies.create_company(session, "Bench Shop", now=now, tariff="standard",
                                       register_limit=TERMINALS, status="ACTIVE")
    _, key = credentials.issue_credential(session, company.id, "bench", list(ALL_SCOPES),
                                          pepper=PEPPER, now=now)
    stores = [Store(company_id=company.id, name=f"Store {n}", address="Lenina 1", city="Moscow",
                    latitude=55.75, longitude=37.61, channels="", created_at=now) for n in range(4)]
    session.add_all(stores)
    session.flush()
    terminals = [Terminal(company_id=company.id, store_id=stores[n // 4].id, name=f"Register {n}",
                          state="ACTIVE", pos_key=f"POS-{n}", created_at=now, updated_at=now)
                 for n in range(TERMINALS)]
    cashiers = [Cashier(company_id=company.id, external_id=f"C-{n}", name=f"Кассир {n}",
                        created_at=now) for n in range(CASHIERS)]
    session.add_all(terminals + cashiers)
    session.flush()
    campaigns = [session.execute(text(
        "INSERT INTO campaigns (company_id, id, created_at, name, starts_at, ends_at, accrual_bp, "
        "skus, categories, store_ids, active) VALUES (:c, md5(:n)::uuid::text, :now, :n, :now, "
        ":now, 1000, '[]', '[]', '[]', false) RETURNING id"),
        {"c": company.id, "n": f"Campaign {n}", "now": now}).scalar() for n in range(3)]
    session.commit()
    values = {"company": company.id, "now": now, "customers": customers,
              "terminals": [t.id for t in terminals], "stores": [s.id for s in stores],
              "cashiers": [c.id for c in cashiers], "campaigns": campaigns,
              "return_lines": '[{"line_id":"1","quantity":1000,"restored_redemption":0,'
                              '"reversed_accrual":500}]'}
    sale_entries = sales + sales // 3
    rebuild = strip(session)
    session.execute(text("SET synchronous_commit = off"))
    for statement, count, what in (
            (CUSTOMERS, customers, "customers"), (ACCOUNTS, customers, "accounts"),
            (LOTS, customers, "lots"), (SESSIONS, sales, "sessions"), (SALES, sales, "sales"),
            (LINES, sales, "sales' lines"), (SALE_ENTRIES, sales, "sales' entries"),
            (OTHER_ENTRIES, max(0, entries - sale_entries), "other entries"),
            (RETURNS, sales, "sales for returns")):
        started = time.perf_counter()
        for low in range(1, count + 1, CHUNK):
            session.execute(text(statement), {**values, "low": low,
                                              "high": min(low + CHUNK - 1, count)})
            session.commit()
        print(f"  {what}: {count:,} in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    session.execute(text("SET maintenance_work_mem = '1GB'"))
    for statement in rebuild:
        session.execute(text(statement))
        session.commit()
    print(f"  keys, indexes and foreign keys built back ({len(rebuild)}): "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    session.close()
    raw = app.extensions["engine"].raw_connection()
    raw.driver_connection.autocommit = True
    started = time.perf_counter()
    raw.cursor().execute("VACUUM ANALYZE")
    raw.driver_connection.autocommit = False  # back to the pool as the app expects it
    raw.close()
    print(f"  vacuum analyze: {time.perf_counter() - started:.0f} s", flush=True)
    return company.id, key


def strip(session) -> list[str]:
    """Drops the big tables' foreign keys (both ways), keys and indexes; returns the statements
    that build them back (keys, then indexes, then foreign keys), in that order."""
    tables = {"tables": list(BIG_TABLES)}
    foreign = session.execute(text(
        "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid) "
        "FROM pg_constraint c WHERE c.contype = 'f' AND (c.conrelid::regclass::text = ANY(:tables) "
        "OR c.confrelid::regclass::text = ANY(:tables))"), tables).all()
    keys = session.execute(text(
        "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid) "
        "FROM pg_constraint c WHERE c.contype IN ('p', 'u') "
        "AND c.conrelid::regclass::text = ANY(:tables)"), tables).all()
    indexes = session.execute(text(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
        "WHERE i.indrelid::regclass::text = ANY(:tables) "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)"),
        tables).all()
    for table, name, _ in foreign + keys:
        session.execute(text(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"'))
    for name, _ in indexes:
        session.execute(text(f"DROP INDEX {name}"))
    session.commit()
    return ([f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'
             for table, name, definition in keys] + [definition for _, definition in indexes]
            + [f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'
               for table, name, definition in foreign])


def measure(app, key: str, repeat: int) -> None:
    client = app.test_client()
    headers = {"Authorization": f"Bearer {key}"}
    today = moscow_day(utcnow())
    month = {"from": (today - timedelta(days=30)).isoformat(), "to": today.isoformat()}
    year = {"from": (today - timedelta(days=365)).isoformat(), "to": today.isoformat()}
    runs = [("liability", {}), ("ledger", {**month, "groupBy": "day"}),
            ("registers", {**month, "groupBy": "cashier"}), ("registers", {**month, "groupBy": "day"}),
            ("program", month)]
    for name, query in runs:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            response = client.get(f"/v1/reports/{name}", query_string=query, headers=headers)
            response.get_data()
            times.append(time.perf_counter() - started)
            assert response.status_code == 200, response.get_data(as_text=True)
        print(f"  {name} {query.get('groupBy', '')} 31 days: best {min(times):.3f} s, "
              f"worst {max(times):.3f} s", flush=True)
    for group_by in ("cashier", "day"):
        tracemalloc.start()
        started = time.perf_counter()
        response = client.get("/v1/reports/registers", query_string={**year, "groupBy": group_by},
                              headers={**headers, "Accept": "text/csv"})
        size = sum(len(chunk) for chunk in response.response)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"  registers by {group_by}, 366 days, CSV: {size:,} bytes in {elapsed:.2f} s, "
              f"peak Python memory {peak / 2**20:.1f} MiB", flush=True)


def load() -> str:
    return "load %.1f %.1f %.1f" % os.getloadavg()


def registers(app, url: str, key: str, rounds: int, seconds: float, repeat: int,
              pause: float, toggled: tuple[str, ...] = REPORT_INDEXES,
              before: dict[str, str] | None = None, warm_up: float = 5) -> None:
    """The registers' checkouts/s without and with the reports' indexes (or those `toggled`;
    none: the same state twice, the bench's own noise), alternating, then the reports' times
    while the registers run. `before`: indexes (name: definition) that stand in the "without"
    state only, so that it is the schema as it was before the reports."""
    engine = app.extensions["engine"]
    before = before or {}
    with engine.connect() as connection:
        definitions = dict(connection.execute(text(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
            "WHERE indexrelid::regclass::text = ANY(:names)"), {"names": list(toggled)}).all())

    def indexes(present: bool) -> None:
        started = time.perf_counter()
        with engine.connect() as connection:
            connection.execute(text("SET maintenance_work_mem = '1GB'"))
            for name, definition in definitions.items():
                connection.execute(text(definition if present else f"DROP INDEX {name}"))
            for name, definition in before.items():
                connection.execute(text(f"DROP INDEX {name}" if present else definition))
            connection.commit()
            # The build's WAL and pages on the disk now, not in the round that follows it: the
            # operating system writes back a 400 MB index for seconds after the checkpoint, and
            # each commit's fsync waits behind it.
            connection.execute(text("CHECKPOINT"))
        os.sync()
        time.sleep(5)
        print(f"  {'built' if present else 'dropped'} {len(definitions)} indexes "
              f"({'dropped' if present else 'built'} {len(before)}) in "
              f"{time.perf_counter() - started:.0f} s", flush=True)

    def shop_of_its_own(port: int) -> list:
        """A new company's 16 registers: each customer's open lots grow by one a checkout (every
        sale accrues a lot), and a customer's hold and commit read them all, so registers
        that went on from round to round would slow down round by round whatever the indexes."""
        shop = checkout.seed(url, TERMINALS, extra_customers=1000)
        return [lambda r=r: checkout.HttpRegister(port, shop.key, r, [r.customer_id])
                for r in shop.registers[:TERMINALS]]

    with gunicorn(url) as port:
        checkout.play(shop_of_its_own(port)[:8], seconds=3)  # warm up
        built = True  # as the migrations leave them
        for round_ in range(rounds):
            # without-with, then with-without: a machine growing busier or quieter through
            # the run favours neither
            for present in (False, True) if round_ % 2 == 0 else (True, False):
                if present != built:
                    indexes(present)
                    built = present
                stream = shop_of_its_own(port)
                # The cache warm again, and past what a build leaves behind: the first seconds
                # after a large index is built run slower, whatever it is.
                checkout.play(stream, seconds=warm_up, processes=TERMINALS)
                load_before = load()
                tally, elapsed = checkout.play(stream, seconds, pause, processes=TERMINALS)
                toggled_what = "the reports' indexes" if definitions else "(A/A: none toggled)"
                print(f"  round {round_ + 1}, {'with' if present else 'without'} {toggled_what}: "
                      f"{tally.checkouts / elapsed:.1f} checkouts/s, errors {tally.errors or 0} "
                      f"({load_before}; after: {load()})", flush=True)
        if not built:  # the reports are timed with their indexes, as deployed
            indexes(True)
        print(f"  the reports while {TERMINALS} registers run ({load()}):", flush=True)
        reports = threading.Thread(target=lambda: (time.sleep(2), measure(app, key, repeat)))
        reports.start()
        while reports.is_alive():
            tally, elapsed = checkout.play(stream, seconds, pause, processes=TERMINALS)
            print(f"  registers meanwhile: {tally.checkouts / elapsed:.1f} checkouts/s "
                  f"({load()})", flush=True)
        reports.join()


def reuse(app) -> str:
    """A key of the company a kept run seeded."""
    session = app.extensions["session_factory"]()
    company_id = session.scalar(text("SELECT id FROM companies WHERE name = 'Bench Shop'"))
    _, key = credentials.issue_credential(session, company_id, "bench again", list(ALL_SCOPES),
                                          pepper=PEPPER, now=utcnow())
    session.commit()
    session.close()
    return key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--sales", type=int, default=1_000_000)
    parser.add_argument("--entries", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--database", help="a database a run kept: measure it, seed nothing")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rounds of 16 registers without and with the reports' indexes")
    parser.add_argument("--seconds", type=float, default=20, help="each round's length")
    parser.add_argument("--pause-ms", type=float, default=0,
                        help="the registers' pause between steps (50: a till's pace)")
    parser.add_argument("--indexes", default=",".join(REPORT_INDEXES),
                        help="the indexes the rounds drop and build (comma-separated; "
                             "'none': an A/A run)")
    parser.add_argument("--warm-up", type=float, default=5,
                        help="seconds of registers before each round, not counted")
    parser.add_argument("--as-before", action="store_true",
                        help="the 'without' state is the schema before the reports: also "
                             "without 0019's lots index, with the indexes 0019 dropped")
    args = parser.parse_args()
    toggled = tuple(name for name in args.indexes.split(",") if name and name != "none")
    if args.as_before:
        toggled += ("ix_reward_lots_spending",)
    with (nullcontext(SERVER_URL.rsplit("/", 1)[0] + "/" + args.database) if args.database
          else bench_database(keep=args.keep)) as url:
        print(f"database {url.rsplit('/', 1)[1]} ({load()})", flush=True)
        app = _app(url)
        key = reuse(app) if args.database else seed(app, args.customers, args.sales,
                                                    args.entries)[1]
        measure(app, key, args.repeat)
        if args.rounds:
            registers(app, url, key, args.rounds, args.seconds, args.repeat,
                      args.pause_ms / 1000, toggled, BEFORE_0019 if args.as_before else None,
                      args.warm_up)
        app.extensions["engine"].dispose()


if __name__ == "__main__":
    main()
