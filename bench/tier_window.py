"""A change of the tier window (docs/api.md#tiers) in a company of `--customers` customers
(1,000,000 by default), on PostgreSQL: how long the change takes (it moves the window's
version and locks no account), then how long one run of the periodic job takes to recount
the spends it leaves behind (SPEND_MOST accounts a run) and how many remain.

Seeds the customers and their accounts as bench/expiry.py does (COPY), without sales, so
every recount is its index lookup and its write.

    .venv/bin/python bench/tier_window.py [--customers 1000000]
"""
from __future__ import annotations

import argparse
import json
import time

from expiry import _app, seed  # also puts the repository on sys.path
from harness import bench_database
from sqlalchemy import func, select

from app.database.engine import utcnow
from app.models import Program, RewardAccount
from app.services.program import settings as program_settings
from worker.periodic import SPEND_MOST, refresh_spends


def measure(url: str, company_id: str) -> dict:
    app = _app(url)
    session = app.extensions["session_factory"]()
    begun = time.perf_counter()
    program_settings.change_program(session, company_id, now=utcnow(), tier_window_days=30)
    session.commit()
    change_ms = (time.perf_counter() - begun) * 1000
    begun = time.perf_counter()
    recounted = refresh_spends(session, utcnow())
    run_s = time.perf_counter() - begun
    version = session.scalar(select(Program.tier_window_version)
                             .where(Program.company_id == company_id))
    behind = session.scalar(select(func.count()).select_from(RewardAccount).where(
        RewardAccount.company_id == company_id, RewardAccount.spend_window_version < version))
    session.close()
    app.extensions["engine"].dispose()
    return {"window_change_ms": round(change_ms, 1), "job_run_recounted": recounted,
            "job_run_seconds": round(run_s, 1), "spend_most": SPEND_MOST,
            "still_behind": behind}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--customers", type=int, default=1_000_000)
    args = parser.parse_args()
    with bench_database() as url:
        company_id = seed(url, args.customers, 1, 0, 0)
        print(json.dumps({"customers": args.customers, **measure(url, company_id)}, indent=1))


if __name__ == "__main__":
    main()
