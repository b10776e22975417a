"""The periodic expiry of points (docs/api.md#expiry) at scale, on PostgreSQL: one company with
`--customers` customers (1,000,000 by default), each holding lots; `--due-lots` of them
(100,000) are past their expiresAt, spread over accounts of `--due-per-account` due lots.

Seeds in bulk (COPY) customers, accounts, their ledger entries and lots, consistent with the
ledger (`ledger verify` finds nothing), then runs the job's task (`worker.periodic
.expire_points`: batches of EXPIRE_BATCH accounts, each its own short transaction) until
nothing is due, timing every batch from the statement that locks its accounts to the end of
its commit: that is how long they stay locked. Reports the total time, lots expired per second and the batches'
lock times; then checks the ledger.

Target: 100,000 due lots in under 60 s, no account locked for more than a few milliseconds.

    .venv/bin/python bench/expiry.py [--customers 1000000] [--due-lots 100000]
                                     [--due-per-account 2] [--lots-per-customer 3]
                                     [--batch EXPIRE_BATCH] [--no-verify]
"""
from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event, func, select  # noqa: E402

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.models import LedgerEntry  # noqa: E402
from app.services.cards.identifiers import ean13_check_digit  # noqa: E402
from app.services.rewards import upkeep, verification  # noqa: E402
from app.services.tenancy import companies  # noqa: E402
from harness import PEPPER, bench_database  # noqa: E402
from worker.periodic import EXPIRE_BATCH  # noqa: E402

LOT = 10_000  # kopecks in each lot


def _app(url: str):
    return create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                               development=False))


def seed(url: str, customers: int, lots_per_customer: int, due_accounts: int,
         due_per_account: int) -> str:
    """One company; every customer with `lots_per_customer` lots of LOT kopecks, each from
    its ADJUSTMENT entry; the first `due_accounts` customers with `due_per_account` of them
    past due, the rest due in a year."""
    app = _app(url)
    session = app.extensions["session_factory"]()
    now = utcnow()
    company_id = companies.create_company(session, "Bench Shop", now=now, tariff="standard",
                                          register_limit=10, status="ACTIVE").id
    companies.update_program(session, company_id, points_lifetime_days=365)
    session.commit()
    session.close()
    rng = random.Random(13)
    past, later = now - timedelta(hours=1), now + timedelta(days=365)
    raw = app.extensions["engine"].raw_connection()
    try:
        cursor = raw.cursor()
        chunk = 50_000
        for base in range(0, customers, chunk):
            people, accounts, entries, lots = (io.StringIO() for _ in range(4))
            for i in range(base, min(base + chunk, customers)):
                customer_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                number = "2" + f"{i:011d}"
                people.write(f"{company_id}\t{customer_id}\t{now.isoformat()}\t+79{i:09d}\tBench\t"
                             f"{number + ean13_check_digit(number)}\tt{i}\n")
                due = due_per_account if i < due_accounts else 0
                first_end = past if due else later
                accounts.write(f"{company_id}\t{customer_id}\t{LOT * lots_per_customer}\t0\t0\t"
                               f"{first_end.isoformat()}\t{(first_end - timedelta(days=7)).isoformat()}"
                               f"\t{now.isoformat()}\n")
                for n in range(lots_per_customer):
                    lot_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                    created = (now - timedelta(seconds=lots_per_customer - n)).isoformat()
                    end = past if n < due else later
                    entries.write(f"{company_id}\t{lot_id}\t{created}\t{customer_id}\tADJUSTMENT\t"
                                  f"{LOT}\tACTIVE\t{created}\tbench\n")
                    lots.write(f"{company_id}\t{lot_id}\t{customer_id}\t{LOT}\t{LOT}\t"
                               f"{end.isoformat()}\t{(end - timedelta(days=7)).isoformat()}\t"
                               f"{created}\n")
            for buffer in (people, accounts, entries, lots):
                buffer.seek(0)
            cursor.copy_expert("COPY customers (company_id, id, created_at, phone, first_name, "
                               "card_number, card_token) FROM STDIN", people)
            cursor.copy_expert("COPY reward_accounts (company_id, customer_id, available, pending, "
                               "reserved, next_expiry_at, next_reminder_at, updated_at) FROM STDIN",
                               accounts)
            cursor.copy_expert("COPY ledger_entries (company_id, id, created_at, customer_id, type, "
                               "amount, status, available_at, basis) FROM STDIN", entries)
            cursor.copy_expert("COPY reward_lots (company_id, id, customer_id, amount, remaining, "
                               "expires_at, remind_at, created_at) FROM STDIN", lots)
            raw.commit()
            print(f"  seeded {min(base + chunk, customers):,} customers", flush=True)
        raw.driver_connection.autocommit = True
        cursor.execute("VACUUM ANALYZE")
    finally:
        raw.close()
    app.extensions["engine"].dispose()
    return company_id


def run_job(url: str, now, batch: int) -> dict:
    """The task's batches until nothing is due, each timed from its locking statement to the
    end of its commit."""
    app = _app(url)
    session = app.extensions["session_factory"]()
    connection_events = app.extensions["engine"]
    started: list[float] = []

    def locking_statement(_connection, _cursor, statement, *_args):
        if "FOR UPDATE" in statement and not started:
            started.append(time.perf_counter())

    event.listen(connection_events, "before_cursor_execute", locking_statement)
    locked_ms, accounts, begun = [], 0, time.perf_counter()
    while True:
        started.clear()
        handled = upkeep.expire_due_accounts(session, now, batch)
        session.commit()
        if not handled:
            break
        locked_ms.append((time.perf_counter() - started[0]) * 1000)
        accounts += handled
        session.take_committed_events()  # no Redis here: the events wait in the outbox
    elapsed = time.perf_counter() - begun
    event.remove(connection_events, "before_cursor_execute", locking_statement)
    expired = session.scalar(select(func.count()).select_from(LedgerEntry)
                             .where(LedgerEntry.type == "EXPIRY"))
    session.close()
    app.extensions["engine"].dispose()
    ordered = sorted(locked_ms)
    return {"seconds": round(elapsed, 1), "accounts": accounts, "lots_expired": expired,
            "lots_per_second": round(expired / elapsed) if elapsed else None,
            "batches": len(locked_ms),
            "lock_ms": {"p50": round(statistics.median(ordered), 2),
                        "p99": round(ordered[int(len(ordered) * 0.99) - 1], 2),
                        "max": round(ordered[-1], 2)} if ordered else None}


def check_ledger(url: str) -> dict:
    """`ledger verify` over the whole database after the job."""
    app = _app(url)
    session = app.extensions["session_factory"]()
    begun = time.perf_counter()
    differences = len(verification.verify(session))
    session.close()
    app.extensions["engine"].dispose()
    return {"ledger_verify_differences": differences,
            "ledger_verify_seconds": round(time.perf_counter() - begun, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--due-lots", type=int, default=100_000)
    parser.add_argument("--due-per-account", type=int, default=2)
    parser.add_argument("--lots-per-customer", type=int, default=3)
    parser.add_argument("--batch", type=int, default=EXPIRE_BATCH, help="accounts a batch")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="skip `ledger verify` after the job")
    args = parser.parse_args()
    if args.due_per_account > args.lots_per_customer:
        parser.error("--due-per-account is at most --lots-per-customer")
    due_accounts = args.due_lots // args.due_per_account
    if due_accounts > args.customers:
        parser.error("more due lots than the customers hold")
    with bench_database() as url:
        begun = time.perf_counter()
        seed(url, args.customers, args.lots_per_customer, due_accounts, args.due_per_account)
        print(json.dumps({"seeded_seconds": round(time.perf_counter() - begun, 1)}), flush=True)
        report = {"customers": args.customers, "due_lots": due_accounts * args.due_per_account,
                  "lots": args.customers * args.lots_per_customer, "batch": args.batch,
                  **run_job(url, utcnow(), args.batch)}
        print(json.dumps(report, indent=1), flush=True)  # before the check, which is long
        if args.verify:
            print(json.dumps(check_ledger(url)), flush=True)


if __name__ == "__main__":
    main()
