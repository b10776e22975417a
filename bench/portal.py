"""The back office's pages at a company of 1,000,000 customers (PostgreSQL).

Seeds the company as bench/customers.py does (or reuses a database it kept), adds an owner,
signs in and times each page in the process, from the request to the last byte of the answer
(no HTTP between): the first page, the search by phone, by card number and by a name fragment,
a profile, an adjustment (POST and its redirect), the staff and audit pages. Target: every
page under 300 ms. Run on demand:

    .venv/bin/python bench/portal.py [--customers 1000000] [--samples 30]
                                     [--keep | --reuse DATABASE_URL]
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import select  # noqa: E402

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.models import Customer  # noqa: E402
from app.services.audit import events as audit  # noqa: E402
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


def measure(database_url: str, company_id: str, phones: list[str], samples: int) -> None:
    app = create_app(Settings(database_url=database_url, api_key_pepper=PEPPER,
                              log_level="WARNING", development=False))
    client = signed_in(app, company_id)
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
        "/portal/": lambda: client.get("/portal/"),
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
        print(f"{name:26} {percentiles(timed(call, samples))}")
    app.extensions["engine"].dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--reuse", metavar="DATABASE_URL", help="measure a database kept earlier")
    args = parser.parse_args()
    if args.reuse:
        measure(args.reuse, *seeded(args.reuse), args.samples)
        return
    with bench_database(keep=args.keep) as url:
        started = time.perf_counter()
        company_id, phones = seed(url, args.customers)
        print(f"seeded {args.customers:,} customers in {time.perf_counter() - started:.0f} s")
        measure(url, company_id, phones, args.samples)
        if args.keep:
            print(f"kept {url}")


if __name__ == "__main__":
    main()
