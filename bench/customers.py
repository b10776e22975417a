"""The customer directory at scale: one company with 1,000,000 customers on PostgreSQL.

Seeds the customers and their reward accounts in bulk (COPY), and their directory name rows as
enrolment writes them, into a fresh database built by the migrations, then measures, in the
database, the queries the API runs:

- search by phone (the register's lookup): the service's query, and its EXPLAIN ANALYZE time;
- a directory page (page + total) filtered by a name fragment and by a phone fragment;
- and, for the whole path, GET /v1/customers/search under gunicorn (the Procfile's serving).

Targets: search p99 < 5 ms; a filtered page < 50 ms. Run on demand:

    .venv/bin/python bench/customers.py [--customers 1000000] [--samples 300] [--http-seconds 10]
                                        [--keep | --reuse DATABASE_URL] [--plans]
"""
from __future__ import annotations

import argparse
import io
import random
import secrets
import statistics
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event  # noqa: E402

from app import create_app  # noqa: E402
from app.config import Settings, normalise_database_url  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.services.cards.identifiers import ean13_check_digit  # noqa: E402
from app.services.customers import profiles  # noqa: E402
from app.services.rewards import verification  # noqa: E402
from app.services.tenancy import companies  # noqa: E402
from harness import PEPPER, bench_database, closed_loop, flask_command, gunicorn  # noqa: E402

FIRST_NAMES = [
    "Александр", "Алексей", "Андрей", "Антон", "Артём", "Борис", "Вадим", "Виктор", "Владимир",
    "Дмитрий", "Евгений", "Иван", "Игорь", "Илья", "Кирилл", "Константин", "Максим", "Михаил",
    "Никита", "Николай", "Олег", "Павел", "Роман", "Сергей", "Степан", "Юрий", "Ярослав",
    "Александра", "Алина", "Анастасия", "Анна", "Валентина", "Вера", "Дарья", "Екатерина",
    "Елена", "Ирина", "Ксения", "Любовь", "Людмила", "Марина", "Мария", "Наталья", "Ольга",
    "Полина", "Светлана", "Софья", "Татьяна", "Юлия", "Яна",
]
SURNAME_ROOTS = [
    "Иван", "Смирн", "Кузнецов", "Попов", "Васильев", "Петров", "Соколов", "Михайлов", "Новиков",
    "Фёдоров", "Морозов", "Волков", "Алексеев", "Лебедев", "Семёнов", "Егоров", "Павлов",
    "Козлов", "Степанов", "Николаев", "Орлов", "Андреев", "Макаров", "Никитин", "Захаров",
    "Зайцев", "Соловьёв", "Борисов", "Яковлев", "Григорьев", "Романов", "Воробьёв", "Сергеев",
    "Кузьмин", "Фролов", "Александров", "Дмитриев", "Королёв", "Гусев", "Киселёв", "Ильин",
    "Максимов", "Поляков", "Сорокин", "Виноградов", "Ковалёв", "Белов", "Медведев", "Антонов",
    "Тарасов", "Жуков", "Баранов", "Филиппов", "Комаров", "Давыдов", "Беляев", "Герасимов",
    "Богданов", "Осипов", "Сидоров", "Матвеев", "Титов", "Марков", "Миронов", "Крылов",
]
SUFFIXES = ["", "ский", "ых", "ко", "енко", "ин", "ич", "ец", "ук", "як", "ан", "ель"]


def surnames() -> list[str]:
    """A few thousand distinct surnames, so a fragment matches a realistic share."""
    made = {root + suffix for root in SURNAME_ROOTS for suffix in SUFFIXES}
    made |= {f"{root}{a}{b}" for root in SURNAME_ROOTS[:40] for a in "аеиоу" for b in "втнр"}
    return sorted(made)


def seed(database_url: str, count: int) -> tuple[str, list[str]]:
    """One company and `count` customers with accounts; returns the company id and phones."""
    app = create_app(Settings(database_url=database_url, api_key_pepper=PEPPER, log_level="WARNING",
                              development=False))
    session = app.extensions["session_factory"]()
    company_id = companies.create_company(session, "Bench Shop", now=utcnow(), tariff="standard",
                                          register_limit=10, status="ACTIVE").id
    session.commit()
    session.close()

    rng = random.Random(4)
    phones = [f"+79{n:09d}" for n in rng.sample(range(10 ** 9), count)]
    cards = rng.sample(range(10 ** 11), count)
    names = surnames()
    start = datetime(2023, 1, 1, tzinfo=timezone.utc)
    step = (utcnow() - start) / count
    raw = app.extensions["engine"].raw_connection()
    try:
        cursor = raw.cursor()
        chunk = 100_000
        for base in range(0, count, chunk):
            people, accounts, entries, lots = (io.StringIO() for _ in range(4))
            for i in range(base, min(base + chunk, count)):
                customer_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                created = (start + step * i).isoformat()
                last = rng.choice(names) if rng.random() < 0.9 else r"\N"
                number = "2" + f"{cards[i]:011d}"
                people.write("\t".join((company_id, customer_id, created, phones[i],
                                        rng.choice(FIRST_NAMES), last, number + ean13_check_digit(number),
                                        secrets.token_urlsafe(32))) + "\n")
                available = rng.choice((0, 0, rng.randrange(1, 500_000)))
                accounts.write(f"{company_id}\t{customer_id}\t{available}\t0\t0\t\\N\t{created}\n")
                if available:  # the balance comes from the ledger, and is a lot of points that
                    # never expire, so `ledger verify` agrees
                    entry_id = uuid.UUID(int=rng.getrandbits(128), version=4)
                    entries.write(f"{company_id}\t{entry_id}\t{created}\t{customer_id}\tADJUSTMENT\t"
                                  f"{available}\tACTIVE\t{created}\topening balance\n")
                    lots.write(f"{company_id}\t{entry_id}\t{customer_id}\t{available}\t"
                               f"{available}\t{created}\n")
            for buffer in (people, accounts, entries, lots):
                buffer.seek(0)
            cursor.copy_expert("COPY customers (company_id, id, created_at, phone, first_name, last_name, "
                               "card_number, card_token) FROM STDIN", people)
            cursor.copy_expert("COPY reward_accounts (company_id, customer_id, available, pending, "
                               "reserved, next_maturity_at, updated_at) FROM STDIN", accounts)
            cursor.copy_expert("COPY ledger_entries (company_id, id, created_at, customer_id, type, "
                               "amount, status, available_at, basis) FROM STDIN", entries)
            cursor.copy_expert("COPY reward_lots (company_id, id, customer_id, amount, remaining, "
                               "created_at) FROM STDIN", lots)
            raw.commit()
            print(f"  seeded {min(base + chunk, count):,}", flush=True)
        session = app.extensions["session_factory"]()  # the name rows, as enrolment writes them
        profiles.record_names(session, company_id)
        session.commit()
        session.close()
        raw.driver_connection.autocommit = True  # VACUUM runs outside a transaction
        cursor.execute("VACUUM ANALYZE customers")
        cursor.execute("VACUUM ANALYZE customer_names")
        cursor.execute("VACUUM ANALYZE reward_accounts")
        cursor.execute("VACUUM ANALYZE ledger_entries")
        raw.driver_connection.autocommit = False
    finally:
        raw.close()
    app.extensions["engine"].dispose()
    return company_id, phones


class Statements:
    """The SQL a service call runs, to EXPLAIN ANALYZE it afterwards."""

    def __init__(self, engine):
        self.engine, self.seen = engine, []

    def __enter__(self):
        event.listen(self.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *exc):
        event.remove(self.engine, "before_cursor_execute", self._record)

    def _record(self, conn, cursor, statement, parameters, context, executemany):
        self.seen.append((statement, parameters))


def explain_ms(engine, statements) -> float:
    """Σ of the database's own execution times of the statements (EXPLAIN ANALYZE)."""
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        total = 0.0
        for statement, parameters in statements:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters)
            total += cursor.fetchone()[0][0]["Execution Time"]
        raw.rollback()
        return total
    finally:
        raw.close()


def plan(engine, statement, parameters) -> str:
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("EXPLAIN ANALYZE " + statement, parameters)
        return "\n".join("      " + row[0] for row in cursor.fetchall())
    finally:
        raw.rollback()
        raw.close()


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return (f"p50 {statistics.median(ordered):7.2f} ms   p99 {p99:7.2f} ms   max {ordered[-1]:7.2f} ms"
            f"   (n={len(ordered)})")


def measure(database_url: str, company_id: str, phones: list[str], samples: int, show_plans: bool):
    app = create_app(Settings(database_url=database_url, api_key_pepper=PEPPER, log_level="WARNING",
                              development=False))
    engine = app.extensions["engine"]
    session = app.extensions["session_factory"]()
    rng = random.Random(7)
    names = surnames()

    def run(label, call, repeat):
        wall, database, last = [], [], None
        for i in range(repeat):
            with Statements(engine) as recorded:
                started = time.perf_counter()
                result = call(i)
                wall.append((time.perf_counter() - started) * 1000)
            session.rollback()
            database.append(explain_ms(engine, recorded.seen))
            last = (recorded.seen, result)
        print(f"  {label}")
        print(f"    in the database (EXPLAIN ANALYZE): {percentiles(database)}")
        print(f"    through the service (SQLAlchemy):  {percentiles(wall)}")
        if show_plans:
            for statement, parameters in last[0]:
                print(plan(engine, statement, parameters))
        return last[1]

    now = utcnow()
    for _ in range(50):  # warm the caches and the compiled-statement cache
        profiles.find_by_phone(session, company_id, rng.choice(phones), now)
    session.rollback()
    print(f"search by phone ({len(phones):,} customers)")
    run("existing phone", lambda i: profiles.find_by_phone(session, company_id, rng.choice(phones), now),
        samples * 3)

    def page(query):
        return lambda i: profiles.directory(session, company_id, now=now, **query(i))[1]

    print("directory page (20 items + total)")
    run("name fragment: 5 letters of a surname", page(lambda i: {"query": _fragment(rng, rng.choice(names), 5)}),
        samples)
    run("name fragment: a whole common first name (broad)",
        page(lambda i: {"query": rng.choice(FIRST_NAMES)}), samples // 3)
    run("phone fragment: 4 digits", page(lambda i: {"query": f"{rng.randrange(10 ** 4):04d}"}), samples)
    run("phone fragment: 7 digits", page(lambda i: {"query": rng.choice(phones)[-7:]}), samples)
    run("no filter, first page", page(lambda i: {}), samples // 10)
    run("minimumAvailable 4000.00", page(lambda i: {"minimum_available": 400_000}), samples // 10)
    session.rollback()
    started = time.perf_counter()
    differences = verification.verify(session, company_id)
    print(f"ledger verify of {len(phones):,} accounts: {time.perf_counter() - started:.1f} s, "
          f"{len(differences)} differences")
    session.close()
    engine.dispose()


SEARCH_PHONES: list[str] = []  # read by the load generator's forked processes


def search_by_phone(client, index, iteration, pause):
    phone = SEARCH_PHONES[(index * 7919 + iteration * 104729) % len(SEARCH_PHONES)]
    client.call("GET /v1/customers/search", "GET", f"/v1/customers/search?phone=%2B{phone[1:]}")


def measure_http(database_url: str, company_id: str, phones: list[str], seconds: float, clients: int = 8):
    key = flask_command(database_url, "credentials", "issue", company_id, "--name", "bench",
                        "--scopes", "customers:read")
    SEARCH_PHONES[:] = random.Random(11).sample(phones, 20_000)
    headers = [{"Authorization": f"Bearer {key}"}] * clients
    with gunicorn(database_url) as port:
        closed_loop(search_by_phone, port, headers, seconds=2)  # warm up
        result = closed_loop(search_by_phone, port, headers, seconds=seconds).summary()
    latency = result["latency_ms"]["GET /v1/customers/search"]
    print(f"GET /v1/customers/search under gunicorn, {clients} clients, {seconds:.0f} s")
    print(f"    {result['per_second']} req/s   p50 {latency['p50']} ms   p99 {latency['p99']} ms   "
          f"errors {result['errors']}")


def _fragment(rng, name: str, length: int) -> str:
    if len(name) <= length:
        return name.lower()
    start = rng.randrange(len(name) - length + 1)
    return name[start:start + length].lower()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--http-seconds", type=float, default=10, help="0 skips the HTTP run")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--reuse", metavar="DATABASE_URL", help="measure a database kept earlier")
    parser.add_argument("--plans", action="store_true", help="print a query plan of each kind")
    args = parser.parse_args()
    if args.reuse:
        company_id, phones = seeded(args.reuse)
        measure(args.reuse, company_id, phones, args.samples, args.plans)
        if args.http_seconds:
            measure_http(args.reuse, company_id, phones, args.http_seconds)
        return
    with bench_database(keep=args.keep) as url:
        started = time.perf_counter()
        company_id, phones = seed(url, args.customers)
        print(f"seeded {args.customers:,} customers in {time.perf_counter() - started:.0f} s")
        measure(url, company_id, phones, args.samples, args.plans)
        if args.http_seconds:
            measure_http(url, company_id, phones, args.http_seconds)
        if args.keep:
            print(f"kept {url}")


def seeded(database_url: str) -> tuple[str, list[str]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(normalise_database_url(database_url))
    with engine.connect() as connection:
        company_id = connection.scalar(text("SELECT id FROM companies WHERE name = 'Bench Shop'"))
        phones = list(connection.scalars(text("SELECT phone FROM customers WHERE company_id = :c"),
                                         {"c": company_id}))
    engine.dispose()
    return company_id, phones


if __name__ == "__main__":
    main()
