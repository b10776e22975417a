"""Whole checkouts at the register, from concurrent registers, against gunicorn (the
Procfile's web line: app/serving.py) + PostgreSQL, beside the raw-SQL floor
measured in the same run.

A checkout is: open a session → quote 4 lines → hold → commit; every 10th also returns a
line. Each register has its own terminal (pos key), cashier and customer; the hot variant
shares 5 customers among all registers (their account rows are the contended locks).

Reports
  (a) checkouts/s with 16 and 64 registers without pauses, own and hot customers, beside the
      floor: the same statements (captured from the app) replayed through bare psycopg2; with
      --turns N, each in N turns of the floor and the app taking turns; with --ceiling, also
      the serving stack's ceiling (bench/ceiling_app.py): the floor's statements served over
      HTTP by the Procfile's gunicorn with nothing of the app, the most any app on this stack
      can reach; with --against CONFIG, also the app under another gunicorn config file (one
      that builds on app/serving.py), so a change to serving is read in the same turns;
  (b) p50/p99 of each operation with 16 registers pausing 50 ms between steps;
  each phase with the CPU that PostgreSQL, gunicorn's workers and the registers spent a
  checkout (bench/machine_cpu.py): steadier than the rates on a shared machine.

  (c) with --campaigns N: the paused run again, alternating rounds without campaigns and
      with N active ones (half matching by catalog category, half by sku), so the quote's
      cost of matching them is read within one run.

Runs on demand only, bounded in time and count, traffic to 127.0.0.1 only:

    .venv/bin/python bench/checkout.py [--seconds 15] [--registers 16,64] [--pause-ms 50]
                                       [--lots-per-customer 20]
    .venv/bin/python bench/checkout.py --skip floor,http,hot,paused --campaigns 50
"""
from __future__ import annotations

import argparse
import http.client
import itertools
import json
import multiprocessing
import pickle
import random
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

import psycopg2
# harness also puts the repository on sys.path
from harness import PEPPER, bench_database, granian, gunicorn, gunicorn_process
from sqlalchemy import select, text

import floor  # noqa: E402  (bench/floor.py)
from machine_cpu import CpuSpent, MachineCpu  # noqa: E402  (bench/machine_cpu.py)
from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.models import (ApiCredential, Cashier, CatalogItem, Company, Customer,  # noqa: E402
                        Program, RewardAccount, Store, Subscription, Terminal)
from app.models.base import new_id  # noqa: E402
from app.services.cards import identifiers  # noqa: E402
from app.services.customers import profiles  # noqa: E402
from app.services.rewards import ledger  # noqa: E402
from app.services.tenancy import companies, credentials  # noqa: E402
from app.services.tenancy.scopes import ALL_SCOPES  # noqa: E402
from app.services.unit_of_work import UnitOfWork  # noqa: E402

HOT_CUSTOMERS = 5
CATALOG_ITEMS = 500
CATEGORIES = 10  # catalog item i is in category i % CATEGORIES
LINES = [
    {"lineId": "1", "sku": "SKU-0001", "name": "Milk 3.2%", "quantity": "2", "price": "89.90",
     "amount": "179.80"},
    {"lineId": "2", "sku": "SKU-0007", "name": "Cigarettes", "quantity": "1", "price": "210.00",
     "amount": "210.00"},  # not redeemable
    {"lineId": "3", "sku": "SKU-0042", "name": "Cheese", "quantity": "0.345", "price": "1290.00",
     "amount": "445.05"},
    {"lineId": "4", "sku": "SKU-0100", "name": "Bread", "quantity": "1", "price": "54.99",
     "amount": "49.99"},
]
STEPS = ("open", "quote", "hold", "commit")
RETURN_EVERY = 10


@dataclass
class Shop:
    company_id: str
    store_id: str
    key: str
    registers: list[floor.Register]
    hot: list[str]
    stable: set[str]  # ids that exist before any measured checkout (the floor keeps them)
    trace: floor.Trace | None = None  # one checkout's statements, as the app sent them


def seed(url: str, registers: int, extra_customers: int, history: int = 0,
         lots_per_customer: int = 0) -> Shop:
    """One company, a store with its catalog, a register (terminal + cashier + customer with a
    big balance) per client, the hot customers, a crowd of other customers, and `history`
    past checkouts of the crowd (a shop in business: tables of its real size, so the plans
    PostgreSQL caches per connection are the ones it keeps in production). With
    `lots_per_customer`, points expire (a year's lifetime) and each register's and hot
    customer's balance is that many lots, expiring a day apart (docs/api.md#expiry)."""
    app = create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                              development=False))
    session = app.extensions["session_factory"]()
    now = utcnow()
    company = companies.create_company(session, "Bench Market", now=now, tariff="standard",
                                       register_limit=registers + 1, status="ACTIVE")
    companies.update_subscription(session, company.id, access_until=now.replace(year=now.year + 1))
    if lots_per_customer:
        companies.update_program(session, company.id, points_lifetime_days=365)
    _, key = credentials.issue_credential(session, company.id, "registers", list(ALL_SCOPES),
                                          pepper=PEPPER, now=now)
    store = Store(company_id=company.id, name="Bench Market", address="Lenina 1", city="Moscow",
                  latitude=55.75, longitude=37.61, created_at=now)
    session.add(store)
    session.flush()
    session.execute(CatalogItem.__table__.insert(), [
        {"company_id": company.id, "store_id": store.id, "sku": f"SKU-{i:04d}", "name": f"Item {i}",
         "price": 100 + i, "redeemable": i % 7 != 0, "accruable": i % 11 != 0,
         "category": f"category-{i % CATEGORIES}", "updated_at": now}
        for i in range(CATALOG_ITEMS)])

    def customer(index: int, balance: int) -> str:
        row = Customer(company_id=company.id, phone=f"+7900{index:07d}", first_name="Bench",
                       card_number=identifiers.new_card_number(), card_token=identifiers.new_card_token(),
                       created_at=now)
        session.add(row)
        session.flush()
        profiles.record_names(session, company.id, [row.id])
        account = ledger.open_account(UnitOfWork.of(session), company.id, row.id, now)
        if not lots_per_customer:
            ledger.post(account, type="ADJUSTMENT", amount=balance, now=now, basis="bench")
        for day in range(lots_per_customer):
            ledger.post(account, type="ADJUSTMENT", amount=balance // lots_per_customer, now=now,
                        basis="bench", expires_at=now + timedelta(days=30 + day))
        return row.id

    made = []
    for i in range(registers):
        terminal = Terminal(company_id=company.id, store_id=store.id, name=f"Register {i}",
                            state="ACTIVE", pos_key=f"bench-register-{i}", created_at=now,
                            updated_at=now)
        session.add(terminal)
        session.flush()
        made.append(floor.Register(terminal.pos_key, terminal.id, customer(i, 10**11),
                                   f"cashier-{i}"))
    hot = [customer(registers + i, 10**11) for i in range(HOT_CUSTOMERS)]
    crowd = [{"company_id": company.id, "id": new_id(), "phone": f"+7901{i:07d}",
              "first_name": "Crowd", "card_number": identifiers.new_card_number(),
              "card_token": identifiers.new_card_token(), "created_at": now}
             for i in range(extra_customers)]
    if crowd:
        session.execute(Customer.__table__.insert(), crowd)
        profiles.record_names(session, company.id)
        session.execute(RewardAccount.__table__.insert(), [
            {"company_id": company.id, "customer_id": c["id"], "available": 0, "pending": 0,
             "reserved": 0, "updated_at": now} for c in crowd])
    session.commit()

    stable = {store.id}
    for table in (Company, Terminal, Customer, ApiCredential, Program, Subscription):
        stable |= set(session.scalars(select(table.id)))

    # One checkout per register through the app in this process: each cashier enters the
    # catalog now, so the measured runs see known cashiers, as a shop in business does.
    client = app.test_client()
    headers = {"Authorization": f"Bearer {key}"}
    for register in made:
        checkout_in_process(client, headers, register)
    stable |= set(session.scalars(select(Cashier.id)))
    session.execute(text("ANALYZE"))  # a shop in business has statistics: plans as in production
    session.commit()
    session.close()
    shop = Shop(company_id=company.id, store_id=store.id, key=key, registers=made, hot=hot, stable=stable,
                trace=floor.capture(app, headers, made[0], LINES))
    app.extensions["engine"].dispose()
    if history and crowd:
        _history(url, shop, [c["id"] for c in crowd], history)
    return shop


def _bench_app(url: str):
    return create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                               development=False))


def make_campaigns(url: str, shop: Shop, count: int) -> list[str]:
    """`count` campaigns running now: half by catalog category (some of the receipt's), half by
    sku, at percents from 1 to 30, every third one for the bench store only."""
    from app.services.program import campaigns

    app = _bench_app(url)
    session = app.extensions["session_factory"]()
    now = utcnow()
    made = []
    for i in range(count):
        by_category = i % 2 == 0
        made.append(campaigns.create_campaign(
            session, shop.company_id, name=f"Campaign {i}", starts_at=now - timedelta(hours=1),
            ends_at=now + timedelta(days=30), accrual_bp=100 + (i * 59) % 2900,
            skus=[] if by_category else [f"SKU-{(i * 37) % CATALOG_ITEMS:04d}", "SKU-0100"],
            categories=[f"category-{i % CATEGORIES}"] if by_category else [],
            store_ids=[shop.store_id] if i % 3 == 0 else [], now=now).id)
    session.commit()
    session.close()
    app.extensions["engine"].dispose()
    return made


def switch_campaigns(app, shop: Shop, ids: list[str], active: bool) -> None:
    from app.services.program import campaigns

    session = app.extensions["session_factory"]()
    for campaign_id in ids:
        campaigns.update_campaign(session, shop.company_id, campaign_id, now=utcnow(),
                                  active=active)
    session.commit()
    session.close()


def quote_costs(app, shop: Shop, ids: list[str], rounds: int, quotes: int) -> dict:
    """The bench receipt quoted again and again on one open session, in this process (no
    server, no other register), alternating rounds without and with the campaigns: the median
    wall time and CPU time of this process (the app's own Python) per quote, in ms."""
    client = app.test_client()
    register = shop.registers[0]
    headers = {"Authorization": f"Bearer {shop.key}", "X-Loyalty-Pos-Key": register.pos_key}

    def post(path, body):
        response = client.post(path, json=body, headers={**headers,
                                                         "Idempotency-Key": uuid.uuid4().hex})
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    session = post("/v1/checkout-sessions", {
        "externalReceiptId": f"Q-{uuid.uuid4().hex[:12]}", "customerId": register.customer_id})
    times = {False: ([], []), True: ([], [])}
    campaign_lines = 0
    for _ in range(rounds):
        for active in (False, True):
            switch_campaigns(app, shop, ids, active)
            quote = post(f"/v1/checkout-sessions/{session['id']}/quote", {"lines": LINES})
            if active:
                campaign_lines = sum(line["campaignId"] is not None for line in quote["lines"])
            wall, cpu = times[active]
            for _ in range(quotes):
                started, started_cpu = time.perf_counter(), time.process_time()
                post(f"/v1/checkout-sessions/{session['id']}/quote", {"lines": LINES})
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - started_cpu) * 1000)
    return {f"{len(ids) if active else 0} campaigns": {
        "quotes": len(wall), "wall_ms_p50": round(percentile(wall, 50), 3),
        "cpu_ms_p50": round(percentile(cpu, 50), 3), "wall_ms_p90": round(percentile(wall, 90), 3)}
        for active, (wall, cpu) in times.items()} | {"lines given a campaign": campaign_lines}


def _history(url: str, shop: Shop, customers: list[str], count: int, threads: int = 4) -> None:
    dsn = url.replace("postgresql+psycopg2://", "postgresql://")
    now = utcnow()
    past = [floor.Register(r.pos_key, r.terminal_id, customers[i % len(customers)], r.cashier_id)
            for i, r in zip(range(count), itertools.cycle(shop.registers))]

    def replay(part):
        replayer = floor.Replayer(dsn, shop.trace, shop.stable)
        try:
            replayer.history(part, now)
        finally:
            replayer.close()

    # In growing steps, each on new connections after ANALYZE: a connection keeps the plans of
    # its foreign-key checks, and plans made on near-empty tables scan them whole.
    for start, end in ((0, count // 100), (count // 100, count // 10), (count // 10, count)):
        step = past[start:end]
        workers = [threading.Thread(target=replay, args=(step[i::threads],))
                   for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        connection = psycopg2.connect(dsn)
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        connection.close()


def checkout_in_process(client, headers, register, *, hold: bool = False):
    """One checkout through the Flask test client: open, quote, (hold,) commit."""
    def post(path, body):
        response = client.post(path, json=body, headers={
            **headers, "Idempotency-Key": uuid.uuid4().hex, "X-Loyalty-Pos-Key": register.pos_key})
        assert response.status_code == 201, response.get_json()
        return response.get_json()
    session = post("/v1/checkout-sessions", {
        "externalReceiptId": f"WARM-{uuid.uuid4().hex}", "customerId": register.customer_id,
        "cashier": {"externalId": register.cashier_id, "name": "Cashier"}})
    quote = post(f"/v1/checkout-sessions/{session['id']}/quote", {"lines": LINES})
    if hold and quote["discount"] != "0.00":
        post(f"/v1/checkout-sessions/{session['id']}/hold", {"quoteId": quote["id"]})
    post(f"/v1/checkout-sessions/{session['id']}/commit", {"quoteId": quote["id"]})


# The registers' side

@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    checkouts: int = 0

    def timer(self, step: str):
        started = time.perf_counter()

        def done():
            self.latencies.setdefault(step, []).append((time.perf_counter() - started) * 1000)
        return done

    def merge(self, other: "Tally") -> None:
        self.checkouts += other.checkouts
        for step, values in other.latencies.items():
            self.latencies.setdefault(step, []).extend(values)
        for what, count in other.errors.items():
            self.errors[what] = self.errors.get(what, 0) + count


class HttpRegister:
    def __init__(self, port: int, key: str, register: floor.Register, customers: list[str]):
        self.port, self.register, self.customers = port, register, customers
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                        "X-Loyalty-Pos-Key": register.pos_key}
        self.connection = None
        self.customer = None  # the customer of the checkout under way

    def _path(self, step: str, path: str) -> str:
        """Where `step` is sent: the app's own path."""
        return path

    def _post(self, tally: Tally, step: str, method: str, path: str, body: dict):
        path = self._path(step, path)
        done = tally.timer(step)
        # A retry is the same request: it keeps its key, so one that took effect is replayed.
        headers = {**self.headers, "Idempotency-Key": uuid.uuid4().hex}
        for _ in range(2):  # a kept connection the server closed meanwhile: reconnect once
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                self.connection.request(method, path, body=json.dumps(body), headers=headers)
                response = self.connection.getresponse()
                data = response.read()
                break
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
        else:
            tally.errors[f"{step} connection"] = tally.errors.get(f"{step} connection", 0) + 1
            return None
        if response.getheader("Connection", "").lower() == "close":
            self.connection.close()
            self.connection = None
        done()
        if response.status >= 300:
            what = f"{step} {response.status}"
            tally.errors[what] = tally.errors.get(what, 0) + 1
            return None
        return json.loads(data)

    def checkout(self, tally: Tally, iteration: int, pause: float) -> None:
        customer = self.customer = random.choice(self.customers)
        session = self._post(tally, "open", "POST", "/v1/checkout-sessions", {
            "externalReceiptId": f"B-{uuid.uuid4().hex}", "customerId": customer,
            "cashier": {"externalId": self.register.cashier_id, "name": "Cashier"}})
        if session is None:
            return
        base = f"/v1/checkout-sessions/{session['id']}"
        time.sleep(pause)
        quote = self._post(tally, "quote", "POST", f"{base}/quote", {"lines": LINES})
        if quote is None:
            return
        time.sleep(pause)
        if quote["discount"] != "0.00":
            if self._post(tally, "hold", "POST", f"{base}/hold", {"quoteId": quote["id"]}) is None:
                return
            time.sleep(pause)
        sale = self._post(tally, "commit", "POST", f"{base}/commit", {"quoteId": quote["id"]})
        if sale is None:
            return
        if iteration % RETURN_EVERY == RETURN_EVERY - 1:
            time.sleep(pause)
            self._post(tally, "return", "POST", f"/v1/sales/{sale['id']}/returns",
                       {"lines": [{"lineId": "1", "quantity": "1"}]})
        tally.checkouts += 1
        time.sleep(pause)


class CeilingRegister(HttpRegister):
    """A register of the serving stack's ceiling (bench/ceiling_app.py): the app's requests,
    bodies and headers, each sent to the ceiling's path for its step."""

    def checkout(self, tally: Tally, iteration: int, pause: float) -> None:
        self.token = uuid.uuid4()
        super().checkout(tally, iteration, pause)

    def _path(self, step: str, path: str) -> str:
        return floor.ceiling_path(self.token, self.customer, self.register.terminal_id, step)


@contextmanager
def ceiling_server(url: str, shop: Shop, workers: int, kind: str, **options):
    """bench/ceiling_app.py (`kind`: wsgi or flask) under the Procfile's gunicorn, replaying
    `shop`'s trace: its port and master process (harness.gunicorn_process, given `options`)."""
    with tempfile.NamedTemporaryFile(suffix=".pickle") as stored:
        pickle.dump((shop.trace, shop.stable), stored)
        stored.flush()
        with gunicorn_process(url, workers, serving=("--pythonpath", "bench", "ceiling_app:app"),
                              BENCH_CEILING_TRACE=stored.name, BENCH_CEILING=kind,
                              **options) as served:
            yield served


class FloorRegister:
    def __init__(self, dsn: str, trace: floor.Trace, stable: set[str], register: floor.Register,
                 customers: list[str]):
        self.replayer = floor.Replayer(dsn, trace, stable)
        self.register, self.customers = register, customers

    def checkout(self, tally: Tally, iteration: int, pause: float) -> None:
        register = floor.Register(self.register.pos_key, self.register.terminal_id,
                                  random.choice(self.customers), self.register.cashier_id)
        steps = STEPS + (("return",) if iteration % RETURN_EVERY == RETURN_EVERY - 1 else ())
        self.replayer.checkout(register, steps, utcnow(), tally.timer)
        tally.checkouts += 1


def _play(make_register, seconds: float, pause: float, max_checkouts: int, queue) -> None:
    tally = Tally()
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def run(factory):
        register, mine = factory(), Tally()
        iteration = 0
        while time.monotonic() < stop_at and iteration < max_checkouts:
            register.checkout(mine, iteration, pause)
            iteration += 1
        with lock:
            tally.merge(mine)

    threads = [threading.Thread(target=run, args=(factory,)) for factory in make_register]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put(tally)


def play(factories: list, seconds: float, pause: float = 0.0, processes: int = 4,
         max_checkouts: int = 100_000) -> tuple[Tally, float]:
    """Registers as threads spread over a few processes (so the generator's own interpreter
    lock does not hold them back), each playing checkouts back to back until time is up."""
    queue = multiprocessing.Queue()
    chunks = [factories[i::processes] for i in range(processes) if factories[i::processes]]
    started = time.perf_counter()
    workers = [multiprocessing.Process(target=_play, args=(chunk, seconds, pause, max_checkouts,
                                                           queue)) for chunk in chunks]
    for worker in workers:
        worker.start()
    total = Tally()
    for _ in workers:
        total.merge(queue.get())
    for worker in workers:
        worker.join()
    return total, time.perf_counter() - started


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else 0.0


def summary(tally: Tally, elapsed: float, cpu: CpuSpent | None = None) -> dict:
    """Rate, errors and latencies; with `cpu`, the CPU each kind of process spent a checkout
    (bench/machine_cpu.py): the ratio app ÷ floor is the floor's machine CPU a checkout over
    the app's, when both phases use the two cores whole."""
    return {"checkouts_per_second": round(tally.checkouts / elapsed, 1),
            "checkouts": tally.checkouts, "errors": tally.errors,
            **({"cpu_ms_per_checkout": cpu.per_checkout_ms(tally.checkouts)} if cpu else {}),
            "ms": {step: {"p50": round(percentile(v, 50), 2), "p99": round(percentile(v, 99), 2),
                          "n": len(v)} for step, v in sorted(tally.latencies.items())}}


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--registers", default="16,64")
    parser.add_argument("--pause-ms", type=float, default=50)
    parser.add_argument("--paused-registers", default="16",
                        help="comma-separated register counts for the paused runs")
    parser.add_argument("--turns", type=int, default=1,
                        help="split each phase of (a) into this many turns, the floor and the "
                             "app alternating (floor, app, app, floor, ...), so the machine's "
                             "drift within a run falls on both alike (each turn starts its "
                             "registers anew: their start is counted in every turn, alike)")
    parser.add_argument("--workers", type=int, default=None,
                        help="gunicorn's processes (default: the Procfile's, app/serving.py)")
    parser.add_argument("--processes", type=int, default=16,
                        help="load generator processes: registers are separate machines, so "
                             "up to 16 run one each and the generator's own GIL adds no wait")
    parser.add_argument("--extra-customers", type=int, default=20_000)
    parser.add_argument("--history", type=int, default=20_000,
                        help="past checkouts seeded before measuring")
    parser.add_argument("--lots-per-customer", type=int, default=0,
                        help="points expire, and every register's customer holds this many "
                             "lots (20 for the issue's figure); 0: points never expire")
    parser.add_argument("--skip", default=[], help="comma-separated: floor,http,hot,paused",
                        action="append")
    parser.add_argument("--ceiling", choices=("wsgi", "flask"),
                        help="in (a), also the serving stack's ceiling: the floor's statements "
                             "served by the Procfile's gunicorn with nothing of the app, as a "
                             "bare WSGI app or through Flask (bench/ceiling_app.py)")
    parser.add_argument("--against", metavar="CONFIG",
                        help="in (a), also the app served under this gunicorn config file (one "
                             "that builds on app/serving.py, as bench/worker_sampler.py does), "
                             "in the same turns: two separate runs differ by more than a change "
                             "to serving moves the ratio (docs/performance.md's git history, round "
                             "twelve); `granian`: the app served by granian (bench/harness.py)")
    parser.add_argument("--rate-limit", default="off",
                        help="the server's API_RATE_LIMIT and API_KEY_RATE_LIMIT (all registers "
                             "share one key, so a limit meant to cost, not to refuse, is far "
                             "above the load)")
    parser.add_argument("--redis-url", default=None,
                        help="the server's REDIS_URL (the rate limit's shared count; events "
                             "are asked a dispatch there too): a Redis of the bench's own")
    parser.add_argument("--campaigns", type=int, default=0,
                        help="also compare the paused run without and with this many campaigns")
    parser.add_argument("--campaign-rounds", type=int, default=3,
                        help="alternating rounds of each, without then with")
    parser.add_argument("--campaign-quotes", type=int, default=300,
                        help="quotes per round of the in-process comparison")
    return parser.parse_args()


def _record(report: dict, key: str, label: str, result: dict) -> None:
    report[key] = result
    print(json.dumps({label: result}), flush=True)


def _in_turns(kinds: list, registers, args) -> dict:
    """Each kind's registers in `args.turns` turns, the kinds alternating (floor, ceiling,
    app, app, ceiling, floor, ...): each kind's summary over its turns."""
    tallies = {kind: Tally() for kind, _ in kinds}
    cpus = {kind: CpuSpent() for kind, _ in kinds}
    seconds_of = dict.fromkeys(tallies, 0.0)
    for turn in range(args.turns):
        for kind, make in kinds if turn % 2 == 0 else kinds[::-1]:
            with MachineCpu() as cpu:
                tally, seconds = play(registers(make), args.seconds / args.turns,
                                      processes=args.processes)
            tallies[kind].merge(tally)
            cpus[kind].add(cpu)
            seconds_of[kind] += seconds
    return {kind: summary(tally, seconds_of[kind], cpus[kind]) for kind, tally in tallies.items()}


def _campaign_runs(report: dict, url: str, shop: Shop, registers, args) -> None:
    """(c): the quote's cost in process, then the paused run without and with campaigns."""
    ids = make_campaigns(url, shop, args.campaigns)
    app = _bench_app(url)
    report["quote in process"] = quote_costs(app, shop, ids, args.campaign_rounds,
                                             args.campaign_quotes)
    print(json.dumps({"quote in process": report["quote in process"]}), flush=True)
    for round_ in range(args.campaign_rounds):
        for active in (False, True):
            switch_campaigns(app, shop, ids, active)
            label = f"round {round_} {args.campaigns if active else 0} campaigns"
            tally, elapsed = play(registers, args.seconds, pause=args.pause_ms / 1000,
                                  processes=args.processes)
            _record(report, label, label, summary(tally, elapsed))
    app.extensions["engine"].dispose()


def _against_server(url: str, args, skip: set, server_env: dict):
    if "against" in skip:
        return nullcontext()
    if args.against == "granian":
        return granian(url, workers=args.workers, **server_env)
    return gunicorn(url, workers=args.workers, config=args.against, **server_env)


def main() -> None:
    args = _arguments()
    counts = [int(n) for n in args.registers.split(",")]
    skip = {part for given in args.skip for part in given.split(",") if part}
    if not args.ceiling:
        skip.add("ceiling")
    if not args.against:
        skip.add("against")
    report = {"registers": counts, "seconds": args.seconds, "gunicorn_workers": args.workers or "the Procfile's",
              "rate_limit": args.rate_limit, "redis": bool(args.redis_url)}
    server_env = {"API_RATE_LIMIT": args.rate_limit, "API_KEY_RATE_LIMIT": args.rate_limit,
                  **({"REDIS_URL": args.redis_url} if args.redis_url else {})}

    with bench_database() as url:
        paused = [] if "paused" in skip else [int(n) for n in args.paused_registers.split(",")]
        compared = [int(n) for n in args.paused_registers.split(",")] if args.campaigns else []
        shop = seed(url, max(counts + paused + compared), args.extra_customers, args.history,
                    args.lots_per_customer)
        report["lots_per_customer"] = args.lots_per_customer
        report["statements_per_request"] = shop.trace.statements()
        print(json.dumps({"statements_per_request": report["statements_per_request"]}), flush=True)
        dsn = url.replace("postgresql+psycopg2://", "postgresql://")
        needs_server = "http" not in skip or paused or compared
        with (gunicorn(url, workers=args.workers, **server_env) if needs_server
              else nullcontext()) as port, \
             (ceiling_server(url, shop, args.workers, args.ceiling) if "ceiling" not in skip
              else nullcontext((None, None))) as (ceiling_port, _), \
             _against_server(url, args, skip, server_env) as against_port:
            # Each kind makes a register of a floor.Register and its customers.
            http = partial(HttpRegister, port, shop.key)
            kinds = [(kind, make) for kind, make in (
                ("floor", partial(FloorRegister, dsn, shop.trace, shop.stable)),
                ("ceiling", partial(CeilingRegister, ceiling_port, shop.key)), ("http", http),
                ("against", partial(HttpRegister, against_port, shop.key))) if kind not in skip]
            variants = {"own": lambda i: [shop.registers[i].customer_id],
                        "hot": lambda i: shop.hot}

            def registers(make, n: int, customers_of=None) -> list:
                """`n` registers' factories, each register's customers `customers_of(i)` (its
                own customer by default)."""
                customers_of = customers_of or variants["own"]
                return [lambda r=r, c=customers_of(i): make(r, c)
                        for i, r in enumerate(shop.registers[:n])]

            served = {kind: make for kind, make in kinds if kind != "floor"}
            if needs_server:  # the paused runs use the app's server too
                served["http"] = http
            for make in served.values():
                play(registers(make, 8), seconds=3)  # warm up
            for variant, customers_of in variants.items():
                if variant in skip:
                    continue
                for n in counts:
                    results = _in_turns(kinds, partial(registers, n=n, customers_of=customers_of),
                                        args)
                    for kind, result in results.items():
                        _record(report, f"{variant} {n} {kind}",
                                f"{variant} customers, {n} registers, {kind}", result)
            for n in paused:
                with MachineCpu() as cpu:
                    tally, elapsed = play(registers(http, n), args.seconds,
                                          pause=args.pause_ms / 1000, processes=args.processes)
                _record(report, f"paused {n} http", f"{n} registers pausing, http",
                        summary(tally, elapsed, cpu))
            if compared:
                _campaign_runs(report, url, shop, registers(http, compared[0]), args)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
