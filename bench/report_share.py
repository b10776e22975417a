"""Whether one company's long reports hold up another company's registers: the registers' p99
without and with three 366-day reports of another company asked for over and over at once,
against the Procfile's gunicorn (`--workers` processes of `--threads` threads), on PostgreSQL.

The reporting company is seeded as bench/reports.py seeds it (smaller by default); the registers
are bench/checkout.py's (open, quote, hold, commit), a company of their own. Each round plays
the registers for `--seconds` without reports, then as long with three report loops running
(each asks again as soon as it is answered, a 429 included), and prints the p99 of every step
and of all steps together, and what the report loops were answered.

    .venv/bin/python bench/report_share.py [--customers 100000] [--sales 200000]
                                           [--entries 1000000] [--registers 8]
                                           [--seconds 20] [--pause-ms 50] [--rounds 2]
                                           [--workers 3] [--threads 4] [--redis-url URL]
                                           [--database NAME] [--keep]
"""
from __future__ import annotations

import argparse
import http.client
import threading
import time
from collections import Counter
from contextlib import nullcontext
from datetime import timedelta

from harness import PEPPER, SERVER_URL, bench_database, gunicorn  # repository on sys.path

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.services.reports.periods import moscow_day  # noqa: E402

import checkout  # noqa: E402  (bench/checkout.py)
import reports  # noqa: E402  (bench/reports.py)

REPORT_LOOPS = 3


class ReportLoops:
    """`REPORT_LOOPS` clients asking for the company's 366-day registers report by cashier,
    each again as soon as it is answered."""

    def __init__(self, port: int, key: str):
        today = moscow_day(utcnow())
        self.path = (f"/v1/reports/registers?groupBy=cashier&to={today.isoformat()}"
                     f"&from={(today - timedelta(days=365)).isoformat()}")
        self.port, self.headers = port, {"Authorization": f"Bearer {key}"}
        self.stop, self.answers, self.lock = threading.Event(), Counter(), threading.Lock()
        self.seconds: list[float] = []
        self.threads = [threading.Thread(target=self.loop) for _ in range(REPORT_LOOPS)]

    def loop(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        while not self.stop.is_set():
            started = time.perf_counter()
            connection.request("GET", self.path, headers=self.headers)
            response = connection.getresponse()
            response.read()
            with self.lock:
                self.answers[response.status] += 1
                if response.status == 200:
                    self.seconds.append(time.perf_counter() - started)
            if response.status == 429:
                self.stop.wait(0.2)  # a client that minds Retry-After less than it should
        connection.close()

    def __enter__(self) -> "ReportLoops":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def said(self) -> str:
        taken = sorted(self.seconds)
        median = f", median {taken[len(taken) // 2]:.2f} s" if taken else ""
        return f"reports answered {dict(sorted(self.answers.items()))}{median}"


def p99s(tally) -> str:
    every = [value for values in tally.latencies.values() for value in values]
    steps = ", ".join(f"{step} {checkout.percentile(values, 99):.1f}"
                      for step, values in sorted(tally.latencies.items()))
    return (f"p99 {checkout.percentile(every, 99):.1f} ms over {len(every)} requests "
            f"({steps}), errors {tally.errors or 0}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--sales", type=int, default=200_000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--registers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--pause-ms", type=float, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--redis-url", help="count the reports' slots there, across processes")
    parser.add_argument("--database", help="a database a run kept: seed nothing")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    with (nullcontext(SERVER_URL.rsplit("/", 1)[0] + "/" + args.database) if args.database
          else bench_database(keep=args.keep)) as url:
        print(f"database {url.rsplit('/', 1)[1]} ({reports.load()})", flush=True)
        app = create_app(Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                                  development=False))
        key = reports.reuse(app) if args.database else reports.seed(
            app, args.customers, args.sales, args.entries)[1]
        app.extensions["engine"].dispose()
        shop = checkout.seed(url, args.registers, extra_customers=1000)
        more = {"WEB_THREADS": str(args.threads)}
        if args.redis_url:
            more["REDIS_URL"] = args.redis_url
        with gunicorn(url, args.workers, **more) as port:
            stream = [lambda r=r: checkout.HttpRegister(port, shop.key, r, [r.customer_id])
                      for r in shop.registers[:args.registers]]
            checkout.play(stream, seconds=3)  # warm up
            pause = args.pause_ms / 1000
            print(f"{args.workers} processes x {args.threads} threads, {args.registers} "
                  f"registers pausing {args.pause_ms:g} ms", flush=True)
            for round_ in range(args.rounds):
                tally, _ = checkout.play(stream, args.seconds, pause)
                print(f"  round {round_ + 1} without reports: {p99s(tally)} ({reports.load()})",
                      flush=True)
                with ReportLoops(port, key) as loops:
                    time.sleep(1)  # the reports under way
                    tally, _ = checkout.play(stream, args.seconds, pause)
                print(f"  round {round_ + 1} with {REPORT_LOOPS} report loops: {p99s(tally)}; "
                      f"{loops.said()} ({reports.load()})", flush=True)


if __name__ == "__main__":
    main()
