"""What one worker process sustains, on PostgreSQL and Redis:

- `--scenario deliveries` (default): webhook deliveries per second against a local HTTPS
  receiver (trustme certificate, answers 204 at once). The rate is taken between the first
  and the last delivery, so start-up does not count.
- `--scenario dispatch`: events per second turned into deliveries (or found to have no
  endpoint), each event handed to the queue one by one as a request does after its commit.

    .venv/bin/python bench/webhook_delivery.py [--scenario deliveries|dispatch] [--count 2000]
        [--worker entry|simple|fork]

`entry` runs `python -m worker` as the Procfile does; `simple` and `fork` run the same entry
with RQ's SimpleWorker (jobs in the worker process) or its forking Worker (a child per job),
to compare the two. Traffic goes to 127.0.0.1 only; bounded by --count and --timeout.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme
from redis import Redis
from rq import Queue, Worker
from sqlalchemy import func, select

from harness import PEPPER, ROOT, bench_database, environment

from app import create_app  # noqa: E402  (harness puts the repository on the path)
from app.config import Settings  # noqa: E402
from app.database.engine import utcnow  # noqa: E402
from app.operations.delivery_queue import enqueue_deliveries  # noqa: E402
from app.operations.delivery_queue import hand_over_events  # noqa: E402
from app.models import OutboxEvent, WebhookDelivery  # noqa: E402
from app.services.tenancy import companies  # noqa: E402
from app.services.webhooks import delivery, endpoints  # noqa: E402
from app.services.webhooks.outbox import record_event  # noqa: E402
from worker.__main__ import periodic_lock_key  # noqa: E402

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
SCHEDULE = "1,1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _serve(cert_file: str, key_file: str, port_pipe) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port_pipe.send(server.server_address[1])
    server.serve_forever()


def start_receiver(files: Path) -> tuple[multiprocessing.Process, int, str]:
    """The HTTPS receiver in a process of its own, certified by a throwaway CA written to
    `files`; returns the process, its port and the CA's file for WEBHOOK_CA_BUNDLE."""
    ca = trustme.CA()
    ca_file, cert_file, key_file = (str(files / name) for name in ("ca.pem", "cert.pem", "key.pem"))
    ca.cert_pem.write_to_path(ca_file)
    issued = ca.issue_cert("127.0.0.1")
    issued.cert_chain_pems[0].write_to_path(cert_file)
    issued.private_key_pem.write_to_path(key_file)
    receiving, sending = multiprocessing.Pipe()
    process = multiprocessing.Process(target=_serve, args=(cert_file, key_file, sending),
                                      daemon=True)
    process.start()
    return process, receiving.recv(), ca_file


def bench_app(database_url: str, queue_name: str):
    return create_app(Settings(database_url=database_url, redis_url=REDIS_URL,
                               api_key_pepper=PEPPER, rq_queue=queue_name, log_level="WARNING",
                               development=False))


def record_events(app, count: int, receiver_port: int | None,
                  company_id: str | None = None) -> list[tuple[str, str]]:
    """`count` committed events of the given company, or of a new one (with an endpoint at the
    receiver when a port is given); returns their (company_id, id)."""
    session = app.extensions["session_factory"]()
    now = utcnow()
    if company_id is None:
        company_id = companies.create_company(session, "Bench webhooks", now=now,
                                              tariff="standard", register_limit=1).id
        if receiver_port is not None:
            endpoints.allow_host(session, "127.0.0.1", now=now)
            endpoints.create_endpoint(session, company_id,
                                      url=f"https://127.0.0.1:{receiver_port}/hook",
                                      events=["*"], description=None, pepper=PEPPER, now=now)
    data = {"id": str(uuid.uuid4()), "phone": "+79123456789", "firstName": "Иван", "lastName": None,
            "balance": {"available": "0.00", "pending": "0.00", "reserved": "0.00"}}
    events = [record_event(session, company_id, "customer.created", data) for _ in range(count)]
    session.commit()
    session.close()
    return [(e.company_id, e.id) for e in events]


def seed_deliveries(app, count: int, receiver_port: int) -> None:
    """`count` deliveries made and enqueued before the worker starts."""
    record_events(app, count, receiver_port)
    session = app.extensions["session_factory"]()
    _, deliveries = delivery.dispatch_pending(session, now=utcnow(), limit=count)
    session.commit()
    session.close()
    enqueue_deliveries(app.config["SETTINGS"], deliveries)


def worker_command(kind: str) -> list[str]:
    if kind == "entry":
        return [sys.executable, "-m", "worker"]
    worker_class = {"simple": "SimpleWorker", "fork": "Worker"}[kind]
    entry = f"from rq import {worker_class}; from worker.__main__ import main; main({worker_class})"
    return [sys.executable, "-c", entry]


def poll(app, done, timeout: float):
    deadline = time.monotonic() + timeout
    with app.extensions["session_factory"]() as session:
        while not done(session) and time.monotonic() < deadline:
            session.rollback()
            time.sleep(0.2)
        session.rollback()


def measure_deliveries(app, count: int, timeout: float) -> dict:
    delivered_count = select(func.count()).where(WebhookDelivery.state == "DELIVERED")
    poll(app, lambda session: session.scalar(delivered_count) >= count, timeout)
    with app.extensions["session_factory"]() as session:
        delivered = session.scalar(delivered_count)
        first, last = session.execute(select(func.min(WebhookDelivery.delivered_at),
                                             func.max(WebhookDelivery.delivered_at))).one()
        states = delivery.delivery_counts(session)
    seconds = (last - first).total_seconds() if first and last else float("nan")
    rate = round((delivered - 1) / seconds, 1) if seconds and seconds > 0 else None
    return {"deliveries": count, "delivered": delivered, "states": states,
            "seconds": round(seconds, 2), "per_second": rate}


def measure_dispatch(app, ids: list[tuple[str, str]], timeout: float) -> dict:
    """Hand each event to the queue as a request does, and time until none is left waiting."""
    waiting = select(func.count()).where(OutboxEvent.dispatched_at.is_(None))
    started = time.perf_counter()
    for pair in ids:
        hand_over_events(app, [pair])
    handed_over = time.perf_counter() - started
    poll(app, lambda session: session.scalar(waiting) == 0, timeout)
    seconds = time.perf_counter() - started
    with app.extensions["session_factory"]() as session:
        left = session.scalar(waiting)
    return {"events": len(ids), "left": left, "enqueue_seconds": round(handed_over, 2),
            "seconds": round(seconds, 2), "per_second": round((len(ids) - left) / seconds, 1)}


def wait_until_listening(queue: Queue, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(w.pid == process.pid for w in Worker.all(queue=queue)):
        if time.monotonic() > deadline:
            raise RuntimeError("the worker did not start")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", choices=("deliveries", "dispatch"), default="deliveries")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--worker", choices=("entry", "simple", "fork"), default="entry")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()

    receiver, port, ca_file = start_receiver(Path(tempfile.mkdtemp(prefix="webhook-bench-")))

    queue_name = f"bench-webhooks-{uuid.uuid4().hex[:8]}"
    redis = Redis.from_url(REDIS_URL)
    queue = Queue(queue_name, connection=redis)
    try:
        with bench_database() as url:
            app = bench_app(url, queue_name)
            if args.scenario == "deliveries":
                seed_deliveries(app, args.count, port)
            else:
                ids = record_events(app, args.count, None)
            env = environment(url, REDIS_URL=REDIS_URL, RQ_QUEUE=queue_name,
                              WEBHOOK_CA_BUNDLE=ca_file, WEBHOOK_ALLOW_PRIVATE_ADDRESSES="1",
                              WEBHOOK_RETRY_SCHEDULE=SCHEDULE)
            worker = subprocess.Popen(worker_command(args.worker), cwd=ROOT, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True)
            try:
                if args.scenario == "deliveries":
                    result = measure_deliveries(app, args.count, args.timeout)
                else:
                    wait_until_listening(queue, worker)
                    result = measure_dispatch(app, ids, args.timeout)
                print(json.dumps({"scenario": args.scenario, "worker": args.worker, **result}))
            finally:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
                app.extensions["engine"].dispose()
    finally:
        queue.delete(delete_jobs=True)
        redis.delete(periodic_lock_key(queue_name))
        receiver.terminate()


if __name__ == "__main__":
    main()
