"""What the per-key rate limit costs a checkout, measured where the bench's noise cannot hide
a few per cent: the app's own CPU per checkout (open, quote 4 lines, hold, commit) through the
Flask test client on PostgreSQL, with the limit off and on, taking turns checkout by checkout
in one process.

Process time leaves out waiting on PostgreSQL and Redis and other processes' queueing; the
wall time per checkout is printed beside it (it includes the limiter's round trips to Redis).
`bench/checkout.py --rate-limit ... --redis-url ...` measures the same under gunicorn.

    .venv/bin/python bench/rate_limit.py --redis-url redis://127.0.0.1:6390/0 [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from checkout import checkout_in_process, seed  # also puts the repository on sys.path
from harness import PEPPER, bench_database

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402

FAR_ABOVE_THE_LOAD = "10000000/minute"  # counted, never refusing


def per_checkout(apps: dict, headers: dict, register, count: int) -> dict:
    """{mode: (CPU ms, wall ms) per checkout} over `count` checkouts of each mode, the modes
    taking turns checkout by checkout, so the machine's drift falls on all of them alike."""
    clients = {mode: app.test_client() for mode, app in apps.items()}
    spent = {mode: [0.0, 0.0] for mode in apps}
    for n in range(count):
        for mode in (list(apps) if n % 2 == 0 else list(reversed(apps))):
            cpu, wall = time.process_time(), time.perf_counter()
            checkout_in_process(clients[mode], headers, register, hold=True)
            spent[mode][0] += time.process_time() - cpu
            spent[mode][1] += time.perf_counter() - wall
    return {mode: (cpu * 1000 / count, wall * 1000 / count) for mode, (cpu, wall) in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis-url", required=True, help="a Redis of the bench's own")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--checkouts", type=int, default=100, help="per round and mode")
    args = parser.parse_args()
    with bench_database() as url:
        shop = seed(url, registers=1, extra_customers=1000, history=0)
        base = Settings(database_url=url, api_key_pepper=PEPPER, log_level="WARNING",
                        development=False, redis_url=args.redis_url)
        modes = {"off": create_app(Settings(**{**base.__dict__, "api_rate_limit": None,
                                                "api_key_rate_limit": None})),
                 "redis": create_app(Settings(**{**base.__dict__,
                                                 "api_rate_limit": FAR_ABOVE_THE_LOAD}))}
        headers = {"Authorization": f"Bearer {shop.key}"}
        register = shop.registers[0]
        per_checkout(modes, headers, register, args.checkouts)  # warm up: plans, caches, scripts
        figures = {mode: [] for mode in modes}
        for _ in range(args.rounds):
            measured = per_checkout(modes, headers, register, args.checkouts)
            for mode in modes:
                figures[mode].append(measured[mode])
            print(json.dumps({mode: [round(v, 3) for v in measured[mode]] for mode in modes}),
                  flush=True)
        for app in modes.values():
            app.extensions["engine"].dispose()
    report = {mode: {"cpu_ms_best": round(min(c for c, _ in rows), 3),
                     "cpu_ms_median": round(statistics.median(c for c, _ in rows), 3),
                     "wall_ms_median": round(statistics.median(w for _, w in rows), 3)}
              for mode, rows in figures.items()}
    for figure in ("cpu_ms_best", "cpu_ms_median"):
        change = report["redis"][figure] / report["off"][figure] - 1
        report[f"change of {figure}"] = f"{change * 100:+.1f} %"
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
