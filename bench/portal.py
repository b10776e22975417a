"""The back office's pages at a company of 1,000,000 customers (PostgreSQL).

Seeds the company as bench/customers.py does (or reuses a database it kept), adds an owner,
signs in and times each page in the process, from the request to the last byte of the answer
(no HTTP between): the dashboard (its default 30 days and a 31-day period), the search by
phone, by card number and by a name fragment, a profile, an adjustment (POST and its
redirect), the staff and audit pages; then each of the dashboard's four reports on its own (the
services it calls, each in its snapshot), so a slow dashboard says which report it waits on.
Targets: every page under 300 ms, the dashboard within 2 s.

`--reports` seeds bench/reports.py's data set instead (1,000,000 customers, 5,000,000 sale
lines, 10,000,000 ledger entries; 6–12 minutes): the dashboard with sales and a ledger behind
it. `--reuse` takes a database either kept (`--keep`; bench/reports.py's `--keep` too). Run on
demand:

    .venv/bin/python bench/portal.py [--customers 1000000] [--samples 30]
                                     [--reports] [--keep | --reuse DATABASE_URL]
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datetime import timedelta  # noqa: E402

from sqlalchemy import select  # noqa: E402

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.models import Customer  # noqa: E402
from app.services.audit import events as audit  # noqa: E402
from app.services.reports.ledger import ledger_movements  # noqa: E402
from app.services.reports.liability import liability  # noqa: E402
from app.services.reports.periods import DAY, Period, moscow_day  # noqa: E402
from app.services.reports.program import program_figures, sales_figures  # noqa: E402
from app.services.reports.registers import register_totals  # noqa: E402
from app.services.staff import members  # noqa: E402
from customers import percentiles, seed, seeded  # noqa: E402
from harness import PEPPER, bench_database  # noqa: E402

PASSWORD = "bench password, long enough"
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def signed_in(app, company_id: str):
    session = app.extensions["session_factory"]()
    member = members.by_email(session, "owner@bench.test")
    if member is None:
        member = members.add_member(session, company_id, email="owner@bench.test", role="owner",
                                    name="Bench Owner", actor=audit.operator(), now=utcnow())
        members.set_password(session, member, PASSWORD)
    session.commit()
    session.close()
    client = app.test_client()
    token = TOKEN.search(client.get("/portal/login").get_data(as_text=True)).group(1)
    answer = client.post("/portal/login", data={"email": "owner@bench.test",
                                                "password": PASSWORD, "csrf_token": token})
    assert answer.status_code == 303, answer.status_code
    return client


def timed(call, samples: int) -> list[float]:
    spent = []
    for _ in range(samples):
        started = time.perf_counter()
        answer = call()
        answer.get_data()
        spent.append((time.perf_counter() - started) * 1000)
        assert answer.status_code in (200, 303), answer.status_code
    return spent


def month() -> Period:
    """The last 31 Moscow days, today included."""
    today = moscow_day(utcnow())
    return Period(today - timedelta(days=30), today)


def dashboard(app, client, company_id: str, samples: int) -> None:
    """The dashboard as a page (its default period, then 31 days), then the four reports it
    runs over 31 days, each timed alone in a snapshot of its own as the page runs it (and the
    whole program report beside the part of it the page runs)."""
    period = month()
    pages = {"/portal/ (30 days)": lambda: client.get("/portal/"),
             "/portal/ (31 days)": lambda: client.get(
                 f"/portal/?from={period.first.isoformat()}&to={period.last.isoformat()}")}
    for name, call in pages.items():
        call()  # warm
        print(f"{name:26} {percentiles(timed(call, samples))}", flush=True)
    reports = {"program (the whole report)":
               lambda session: program_figures(session, company_id, period),
               "program's sales figures": lambda session: sales_figures(session, company_id,
                                                                        period),
               "ledger by day": lambda session: ledger_movements(session, company_id, period, DAY),
               "liability": lambda session: liability(session, company_id, utcnow()),
               "registers by store": lambda session: register_totals(session, company_id,
                                                                     period, "store", {})}
    session = app.extensions["session_factory"]()
    for name, report in reports.items():
        spent = []
        for _ in range(samples):
            started = time.perf_counter()
            report(session)
            spent.append((time.perf_counter() - started) * 1000)
            session.rollback()  # the snapshot ends, as each of the page's does
        print(f"  {name:24} {percentiles(spent)}", flush=True)
    session.close()


def measure(database_url: str, company_id: str, phones: list[str], samples: int,
            dashboard_samples: int) -> None:
    app = create_app(Settings(database_url=database_url, api_key_pepper=PEPPER,
                              log_level="WARNING", development=False))
    client = signed_in(app, company_id)
    dashboard(app, client, company_id, dashboard_samples)
    rng = random.Random(7)
    session = app.extensions["session_factory"]()
    picked = [session.execute(select(Customer.id, Customer.card_number, Customer.first_name)
                              .where(Customer.company_id == company_id,
                                     Customer.phone == rng.choice(phones))).one()
              for _ in range(samples)]
    session.close()
    at = iter(range(10 ** 9))

    def each(make_path):
        return lambda: client.get(make_path(picked[next(at) % len(picked)]))

    profile = picked[0].id
    token = TOKEN.search(client.get(f"/portal/customers/{profile}").get_data(as_text=True)).group(1)
    pages = {
        "search by phone": each(lambda c: f"/portal/customers?q={phones[hash(c.id) % len(phones)]}"),
        "search by card number": each(lambda c: f"/portal/customers?q={c.card_number}"),
        "search by name fragment": each(lambda c: f"/portal/customers?q={c.first_name[:5]}"),
        "profile": each(lambda c: f"/portal/customers/{c.id}"),
        "adjustment (POST)": lambda: client.post(
            f"/portal/customers/{profile}/adjustments",
            data={"amount": "1.00", "basis": "bench", "csrf_token": token}),
        "/portal/staff": lambda: client.get("/portal/staff"),
        "/portal/audit": lambda: client.get("/portal/audit"),
    }
    for name, call in pages.items():
        call()  # warm
        print(f"{name:26} {percentiles(timed(call, samples))}", flush=True)
    app.extensions["engine"].dispose()


def seed_reports(url: str, customers: int) -> None:
    """bench/reports.py's company: a sale a customer (5 lines each) over the last year, ten
    ledger entries a customer."""
    import reports  # bench/reports.py

    app = create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                              development=False))
    reports.seed(app, customers, customers, 10 * customers)
    app.extensions["engine"].dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--dashboard-samples", type=int, default=10,
                        help="the dashboard's and each of its reports' (a second or two each)")
    parser.add_argument("--reports", action="store_true",
                        help="seed bench/reports.py's data set: sales and a ledger too")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--reuse", metavar="DATABASE_URL", help="measure a database kept earlier")
    args = parser.parse_args()
    if args.reuse:
        measure(args.reuse, *seeded(args.reuse), args.samples, args.dashboard_samples)
        return
    with bench_database(keep=args.keep) as url:
        started = time.perf_counter()
        if args.reports:
            seed_reports(url, args.customers)
            company_id, phones = seeded(url)
        else:
            company_id, phones = seed(url, args.customers)
        print(f"seeded {args.customers:,} customers in {time.perf_counter() - started:.0f} s",
              flush=True)
        measure(url, company_id, phones, args.samples, args.dashboard_samples)
        if args.keep:
            print(f"kept {url}")


if __name__ == "__main__":
    main()
