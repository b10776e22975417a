"""What every benchmark needs: a fresh PostgreSQL database built by the migrations, the app
under gunicorn against it, and a closed-loop load generator that reports rate and latency.

Runs on demand only (never in the test suite); traffic goes to 127.0.0.1 only, bounded in
count and time.
"""
from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.config import DEFAULT_WEB_THREADS, normalise_database_url  # noqa: E402
from testbed.ports import free_port  # noqa: E402

SERVER_URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
PEPPER = "bench-pepper"


@contextmanager
def bench_database(keep: bool = False):
    """A fresh database with the schema migrated; dropped afterwards."""
    server = normalise_database_url(SERVER_URL)
    name = f"loyalty_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(server).set(database=name).render_as_string(hide_password=False)
    try:
        from app.database.migrate import upgrade
        upgrade(url)
        yield url
    finally:
        if not keep:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def environment(database_url: str, **more) -> dict:
    env = dict(os.environ, DATABASE_URL=database_url, API_KEY_PEPPER=PEPPER, LOG_LEVEL="WARNING",
               PUBLIC_BASE_URL="https://cards.example.test", FLASK_APP="wsgi")
    env.pop("REDIS_URL", None)
    # One key drives every bench's traffic; bench/checkout.py --rate-limit measures the limit.
    env["API_RATE_LIMIT"] = "off"
    env.update(more)
    return env


def flask_command(database_url: str, *args: str) -> str:
    """Run an operator command; returns its last line."""
    result = subprocess.run([sys.executable, "-m", "flask", *args], cwd=ROOT, check=True,
                            capture_output=True, text=True, env=environment(database_url))
    return result.stdout.strip().splitlines()[-1]


def wait_until_serving(port: int, timeout: float = 30) -> None:
    """Returns once GET /health on the port answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing served on port {port}")
        time.sleep(0.2)


@contextmanager
def gunicorn(database_url: str, workers: int | None = None, **env):
    with gunicorn_process(database_url, workers, **env) as (port, _):
        yield port


@contextmanager
def gunicorn_process(database_url: str, workers: int | None = None, *, tree: Path = ROOT,
                     wrapper: tuple[str, ...] = (), serving: tuple[str, ...] = ("wsgi:app",),
                     config: str | None = None, **env):
    """As `gunicorn`, yielding the master process too (its children are the workers).

    The Procfile's web line (its worker, its logs and metrics across workers: app/serving.py)
    on a port of its own with `workers` processes (None: the Procfile's number); `config`, else BENCH_GUNICORN_CONFIG, names
    another config file that builds on it (bench/worker_sampler.py). `tree` serves another
    source tree (an export of main) with this one's virtualenv; `wrapper` runs gunicorn under
    another program (callgrind: bench/register_cpu.py), given ten minutes to start; `serving`
    names another app for it to serve (bench/ceiling_app.py)."""
    port = free_port()
    config = config or os.environ.get("BENCH_GUNICORN_CONFIG", "python:app.serving")
    command = [*wrapper, sys.executable, "-m", "gunicorn", "--config", config, *serving,
               "-b", f"127.0.0.1:{port}", *(("-w", str(workers)) if workers else ()),
               "--log-level", "warning"]
    with _serving(command, port, tree, environment(database_url, **env),
                  slow=bool(wrapper)) as process:
        yield port, process


@contextmanager
def granian(database_url: str, workers: int | None = None, **env):
    """The app served by granian (its WSGI interface, HTTP parsed outside Python) instead of
    the Procfile's gunicorn, at the same concurrency: `workers` processes (None: 3, as
    app/serving.py) of the web's threads each (app.config.DEFAULT_WEB_THREADS)."""
    port = free_port()
    command = [sys.executable, "-m", "granian", "--interface", "wsgi", "--no-ws",
               "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers or 3),
               "--blocking-threads", str(DEFAULT_WEB_THREADS), "--log-level", "warning",
               "wsgi:app"]
    # gunicorn's settings give the metrics their directory (app/serving.py); granian has none.
    with tempfile.TemporaryDirectory(prefix="bench-granian-metrics-") as metrics, \
            _serving(command, port, ROOT,
                     environment(database_url, PROMETHEUS_MULTIPROC_DIR=metrics, **env)):
        yield port


@contextmanager
def _serving(command: list[str], port: int, tree: Path, env: dict, *, slow: bool = False):
    """A server's process until it answers on `port`, stopped with SIGTERM on the way out; a
    slow one (under callgrind) is given ten minutes to start."""
    process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(port, timeout=600 if slow else 30)
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60 if slow else 30)


@dataclass
class LoadResult:
    clients: int
    seconds: float
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: int = 0
    completed: int = 0  # whole scenarios (a checkout, or one request)

    def rate(self) -> float:
        return self.completed / self.seconds

    def percentile(self, name: str, p: float) -> float:
        values = sorted(self.latencies_ms[name])
        if not values:
            return float("nan")
        return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

    def summary(self) -> dict:
        return {
            "clients": self.clients, "seconds": round(self.seconds, 1), "completed": self.completed,
            "per_second": round(self.rate(), 1), "errors": self.errors,
            "latency_ms": {name: {"p50": round(self.percentile(name, 50), 2),
                                  "p99": round(self.percentile(name, 99), 2),
                                  "count": len(values)}
                           for name, values in self.latencies_ms.items()},
        }


class Client:
    """One register: a connection to the server and a timer per named request."""

    def __init__(self, port: int, headers: dict):
        self.port = port
        self.headers = headers
        self.latencies: dict[str, list[float]] = {}
        self.errors = 0
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, name: str, method: str, path: str, body=None, headers: dict | None = None):
        payload = None if body is None else json.dumps(body)
        all_headers = dict(self.headers, **(headers or {}))
        if payload is not None:
            all_headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        try:
            self.connection.request(method, path, body=payload, headers=all_headers)
            response = self.connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.errors += 1
            return None, None
        if response.getheader("Connection", "").lower() == "close":
            self.connection.close()
        self.latencies.setdefault(name, []).append((time.perf_counter() - started) * 1000)
        if response.status >= 400:
            self.errors += 1
        return response.status, (json.loads(data) if data else None)


def _worker(scenario, port, headers_list, seconds, pause, max_iterations, queue, index_base):
    results = []
    stop_at = time.monotonic() + seconds

    def run(index, headers):
        client = Client(port, headers)
        completed = 0
        while time.monotonic() < stop_at and completed < max_iterations:
            scenario(client, index_base + index, completed, pause)
            completed += 1
        results.append((client.latencies, client.errors, completed))

    threads = [threading.Thread(target=run, args=(i, h)) for i, h in enumerate(headers_list)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put(results)


def closed_loop(scenario, port: int, headers_per_client: list[dict], seconds: float,
                pause: float = 0.0, processes: int = 2, max_iterations: int = 100_000) -> LoadResult:
    """Each client runs `scenario(client, client_index, iteration, pause)` back to back (a
    closed loop) until the time is up. Clients are threads spread over a few processes so
    the generator itself is not held by one interpreter lock."""
    queue = multiprocessing.Queue()
    # Contiguous slices, so client_index (slice start + position) names each client's headers.
    count = len(headers_per_client)
    chunks = [headers_per_client[i * count // processes:(i + 1) * count // processes]
              for i in range(processes)]
    workers = []
    started = time.perf_counter()
    offset = 0
    for chunk in chunks:
        if not chunk:
            continue
        process = multiprocessing.Process(target=_worker, args=(
            scenario, port, chunk, seconds, pause, max_iterations, queue, offset))
        offset += len(chunk)
        process.start()
        workers.append(process)
    collected = [queue.get() for _ in workers]
    for process in workers:
        process.join()
    result = LoadResult(clients=len(headers_per_client), seconds=time.perf_counter() - started)
    for batch in collected:
        for latencies, errors, completed in batch:
            result.errors += errors
            result.completed += completed
            for name, values in latencies.items():
                result.latencies_ms.setdefault(name, []).extend(values)
    return result
