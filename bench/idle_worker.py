"""The worker left alone: `python -m worker`, as the Procfile runs it, delivers an event, sits
idle for a long time (an hour by default), and must then still deliver the next one at once.

What it proves only shows after minutes: redis-py's 5 s socket timeout used to end an idle
worker with status 0. Runs on demand only, against the local PostgreSQL and Redis, with a
local HTTPS receiver:

    .venv/bin/python bench/idle_worker.py [--minutes 60]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from redis import Redis
from rq import Queue
from sqlalchemy import func, select

from harness import ROOT, bench_database, environment
from webhook_delivery import (REDIS_URL, bench_app, poll, record_events, start_receiver,
                              wait_until_listening)

from app.operations.delivery_queue import hand_over_events  # noqa: E402
from app.models import WebhookDelivery  # noqa: E402
from worker.__main__ import periodic_lock_key  # noqa: E402

DELIVERED = select(func.count()).where(WebhookDelivery.state == "DELIVERED")


def _deliver_one(app, company_id: str | None, port: int) -> tuple[str, float]:
    """Record one event as a request does (commit, then hand it to the queue) and time its
    delivery."""
    before = _delivered(app)
    [pair] = record_events(app, 1, port, company_id=company_id)
    started = time.monotonic()
    hand_over_events(app, [pair])
    poll(app, lambda session: session.scalar(DELIVERED) > before, timeout=120)
    return pair[0], (round(time.monotonic() - started, 2) if _delivered(app) > before else None)


def _delivered(app) -> int:
    with app.extensions["session_factory"]() as session:
        return session.scalar(DELIVERED)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=60)
    args = parser.parse_args()
    files = Path(tempfile.mkdtemp(prefix="idle-worker-"))
    receiver, port, ca_file = start_receiver(files)
    queue_name = f"bench-idle-{uuid.uuid4().hex[:8]}"
    queue = Queue(queue_name, connection=Redis.from_url(REDIS_URL))
    log_path = files / "worker.log"
    try:
        with bench_database() as url:
            app = bench_app(url, queue_name)
            # The Procfile's line as written, with this interpreter's environment first on PATH.
            env = environment(url, REDIS_URL=REDIS_URL, RQ_QUEUE=queue_name, LOG_LEVEL="INFO",
                              PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                              WEBHOOK_CA_BUNDLE=ca_file, WEBHOOK_ALLOW_PRIVATE_ADDRESSES="1")
            with log_path.open("w") as log:
                worker = subprocess.Popen(["bash", "-c", _procfile_line("worker")], cwd=ROOT,
                                          env=env, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True)
            try:
                wait_until_listening(queue, worker)
                company_id, first = _deliver_one(app, None, port)
                time.sleep(args.minutes * 60)
                alive = worker.poll() is None
                _, after_idle = _deliver_one(app, company_id, port)
                print(json.dumps({"idle_minutes": args.minutes, "first_delivery_s": first,
                                  "worker_alive_after_idle": alive,
                                  "delivery_after_idle_s": after_idle,
                                  "upkeep_runs": log_path.read_text().count("run_periodic_tasks()"),
                                  "worker_log": str(log_path)}))
            finally:
                os.killpg(worker.pid, signal.SIGTERM)
                print(json.dumps({"worker_exit_status_on_sigterm": worker.wait(timeout=70)}))
                app.extensions["engine"].dispose()
    finally:
        queue.delete(delete_jobs=True)
        queue.connection.delete(periodic_lock_key(queue_name))
        receiver.terminate()


def _procfile_line(name: str) -> str:
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise KeyError(name)


if __name__ == "__main__":
    main()
