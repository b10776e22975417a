"""The upkeep's wallet push sweep (docs/api.md#wallet): what one sweep costs with many registrations
over many accounts. "without a mark" is a sweep that reads every registration, as every sweep
did before the mark (and as the first sweep still does); "nothing changed" is the usual sweep,
which reads only the accounts changed since its mark less the margin; "N changed" has N accounts
(none of them with a device) changed within the margin, as a busy interval leaves.

    .venv/bin/python bench/wallet_sweep.py --accounts 1000000 --registrations 100000
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from harness import bench_database  # repository on sys.path
from sqlalchemy import create_engine, delete, text  # noqa: E402
from sqlalchemy.orm import sessionmaker  # noqa: E402

from app.database.engine import utcnow  # noqa: E402
from app.models import SweepMark  # noqa: E402
from app.services.cards import pass_pushes  # noqa: E402
from worker.pushes import SWEEP_BATCH  # noqa: E402

COMPANY = "00000000-0000-0000-0000-0000000000c0"
FILL = """
INSERT INTO companies (id, name, created_at) VALUES (:company, 'Bench', now());
INSERT INTO customers (company_id, id, created_at, phone, first_name, card_number, card_token)
  SELECT :company, md5(n::text), now(), '+79' || lpad(n::text, 9, '0'), 'Anna',
         lpad(n::text, 13, '0'), md5('t' || n::text)
  FROM generate_series(1, :accounts) n;
INSERT INTO reward_accounts (company_id, customer_id, available, pending, reserved, updated_at,
                             spend, spend_window_version)
  SELECT :company, md5(n::text), 0, 0, 0, now() - interval '1 day', 0, 0
  FROM generate_series(1, :accounts) n;
INSERT INTO wallet_passes (company_id, customer_id, token_digest, created_at)
  SELECT :company, md5(n::text), md5('d' || n::text), now()
  FROM generate_series(1, :accounts, :every) n;
INSERT INTO wallet_registrations (company_id, customer_id, device_library_id, push_token,
                                  created_at, seen_updated_at, push_attempts)
  SELECT :company, md5(n::text), 'device' || n, 'token' || n, now(), now() - interval '1 day', 0
  FROM generate_series(1, :accounts, :every) n;
ANALYZE;
"""


def sweep_ms(sessions, *, forget: bool) -> float:
    with sessions() as session:
        if forget:
            session.execute(delete(SweepMark))
        started = time.perf_counter()
        pass_pushes.mark_stale(session, now=utcnow(), limit=SWEEP_BATCH)
        elapsed = time.perf_counter() - started
        session.commit()
    return elapsed * 1000


def median_ms(sessions, runs: int, *, forget: bool = False) -> float:
    return round(statistics.median(sweep_ms(sessions, forget=forget) for _ in range(runs)), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--accounts", type=int, default=1_000_000)
    parser.add_argument("--registrations", type=int, default=100_000)
    parser.add_argument("--changed", type=int, default=10_000, help="accounts changed in the margin")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with bench_database() as url:
        engine = create_engine(url)
        sessions = sessionmaker(engine)
        with engine.begin() as connection:
            for statement in filter(str.strip, FILL.split(";")):
                connection.execute(text(statement), {
                    "company": COMPANY, "accounts": args.accounts,
                    "every": args.accounts // args.registrations})
        report = {"accounts": args.accounts, "registrations": args.registrations}
        report["sweep ms, without a mark (reads every registration)"] = median_ms(
            sessions, args.runs, forget=True)
        sweep_ms(sessions, forget=False)  # the mark is set
        report["sweep ms, nothing changed"] = median_ms(sessions, args.runs)
        with engine.begin() as connection:  # accounts without a device: a busy interval's
            connection.execute(text(
                "UPDATE reward_accounts SET updated_at = now() WHERE customer_id IN "
                "(SELECT md5(n::text) FROM generate_series(2, :most, 2) n) "
                "AND customer_id NOT IN (SELECT customer_id FROM wallet_registrations)"),
                {"most": args.changed * 2})
        report[f"sweep ms, {args.changed} changed in the margin"] = median_ms(sessions, args.runs)
        with engine.connect() as connection:
            plan = connection.execute(text(
                "EXPLAIN SELECT 1 FROM wallet_registrations r JOIN reward_accounts a "
                "ON a.company_id = r.company_id AND a.customer_id = r.customer_id "
                "WHERE r.seen_updated_at < a.updated_at AND a.updated_at >= now() - "
                "interval '11 minutes' ORDER BY a.updated_at LIMIT 5000")).scalars().all()
        report["plan"] = [line.strip() for line in plan]
        print(json.dumps(report, indent=2))
        engine.dispose()


if __name__ == "__main__":
    main()
