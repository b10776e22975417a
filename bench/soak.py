"""A soak run: registers checking out at a steady rate for minutes against the Procfile's
processes (web with WEB_CONCURRENCY=2, the worker), on their own throwaway PostgreSQL and
Redis, with every event delivered to a local HTTPS receiver (testbed/deployment.py,
which the suite's tests/deployed uses too, builds all of it).

Reports each process's memory (RSS) before the load, after its first minute and at the end;
answers by status; request latency; and the delivery lag of the events (recorded in the
outbox → arrived at the receiver), p50/p99.

    .venv/bin/python bench/soak.py [--minutes 10] [--rate 20] [--registers 8]

Runs on demand only, bounded by --minutes; traffic goes to 127.0.0.1 only.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testbed.deployment import Deployment  # noqa: E402
from testbed.procfile import children, rss_kib  # noqa: E402
from testbed.registers import Register, Tally  # noqa: E402

DRAIN_SECONDS = 120


def percentile(values: list[float], p: float) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))], 3)


def memory(deployment: Deployment) -> dict[str, int]:
    """RSS in MiB of the web's master and workers, and the worker with its children."""
    web, worker = deployment.web.pid, deployment.worker.pid
    processes = {"web master": web, **{f"web worker {i + 1}": pid
                                       for i, pid in enumerate(sorted(children(web)))},
                 "worker": worker, **{f"worker child {i + 1}": pid
                                      for i, pid in enumerate(sorted(children(worker)))}}
    return {name: round(rss_kib(pid) / 1024) for name, pid in processes.items()}


def paced(register: Register, tally: Tally, every: float, offset: float, until: float) -> None:
    """Checkouts started every `every` seconds (never two at once): a steady rate however
    long each one takes, unless the server falls behind."""
    due = time.monotonic() + offset
    while due < until:
        time.sleep(max(0.0, due - time.monotonic()))
        try:
            register.checkout(f"SOAK-{uuid.uuid4().hex[:12]}", tally)
        except Exception as error:  # counted in the report
            with tally.lock:
                tally.failures.append(str(error)[:200])
        due += every


def delivery_lags(deployment: Deployment) -> tuple[list[float], int]:
    """Seconds from each event's recording to its first arrival; how many never arrived."""
    recorded = deployment.query("SELECT id, extract(epoch FROM created_at) FROM outbox_events"
                                " WHERE company_id = %s", deployment.company_id)
    arrived: dict[str, float] = {}
    for received in deployment.receiver.received():
        arrived.setdefault(received.event_id, received.at)
    lags = [arrived[event_id] - float(at) for event_id, at in recorded if event_id in arrived]
    return lags, len(recorded) - len(lags)


def log_levels(process) -> dict[str, int]:
    """How many of the process's JSON log lines there are of each level above INFO."""
    counts: dict[str, int] = {}
    for line in process.log.read_text(errors="replace").splitlines():
        try:
            level = json.loads(line).get("level", "?")
        except ValueError:
            level = "(not JSON)"
        if level not in ("INFO", "DEBUG"):
            counts[level] = counts.get(level, 0) + 1
    return counts


def soak(minutes: float, rate: float, registers: int, logs: Path | None = None) -> dict:
    deployment = Deployment()
    try:
        # The upkeep at its production interval (the harness's own is short).
        deployment.start(registers=registers, UPKEEP_INTERVAL_SECONDS="30")
        tally = Tally()
        before = memory(deployment)
        started = time.monotonic()
        until = started + minutes * 60
        every = registers / rate
        threads = [threading.Thread(target=paced, args=(r, tally, every, i * every / registers,
                                                        until))
                   for i, r in enumerate(deployment.registers)]
        for thread in threads:
            thread.start()
        time.sleep(min(60.0, minutes * 60 / 2))
        first_minute = memory(deployment)
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - started
        end = memory(deployment)
        deployment.receiver.wait_for(set(deployment.recorded_events()), DRAIN_SECONDS)
        lags, undelivered = delivery_lags(deployment)
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            for process in (deployment.web, deployment.worker):
                shutil.copy(process.log, logs / process.log.name)
        latencies = [(a.ended - a.started) * 1000 for a in tally.answers]
        return {
            "minutes": minutes, "registers": registers, "target_per_second": rate,
            "checkouts": len(tally.committed),
            "checkouts_per_second": round(len(tally.committed) / seconds, 1),
            "requests": len(tally.answers), "answers": tally.by_status(),
            "failed_checkouts": len(tally.failures), "failures": tally.failures[:5],
            "request_ms": {"p50": percentile(latencies, 50), "p99": percentile(latencies, 99)},
            "events": len(lags) + undelivered, "undelivered": undelivered,
            "delivery_lag_s": {"p50": percentile(lags, 50), "p99": percentile(lags, 99),
                               "max": percentile(lags, 100)},
            "delivered_after_5_s": sum(1 for lag in lags if lag > 5),
            "log_lines_above_info": {"web": log_levels(deployment.web),
                                     "worker": log_levels(deployment.worker)},
            "rss_mib": {"before": before, "after_first_minute": first_minute, "end": end},
            "web_and_worker_running": deployment.web.running() and deployment.worker.running(),
        }
    finally:
        deployment.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=float, default=20, help="checkouts per second, in all")
    parser.add_argument("--registers", type=int, default=8)
    parser.add_argument("--logs", type=Path, help="copy the processes' logs to this directory")
    args = parser.parse_args()
    print(json.dumps(soak(args.minutes, args.rate, args.registers, args.logs), indent=2))


if __name__ == "__main__":
    main()
