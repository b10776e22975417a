"""The capacity model of docs/scaling.md: the register's checkouts at 16 registers, in one run,
served two ways over one fresh PostgreSQL database, alternated (A B A B) so the noise shows:

  direct  the Procfile's `web` line (gunicorn, `--config python:app.serving`) with N workers,
          straight on PostgreSQL;
  fleet   nginx (deploy/nginx/loyalty.conf) in front of two such instances of N/2 workers
          each, on PgBouncer (deploy/pgbouncer/pgbouncer.ini, transaction pooling) in front of
          the same PostgreSQL.

For each round: checkouts/s; the CPU seconds the gunicorn processes, nginx, PgBouncer and the
database's PostgreSQL backends spent (from /proc/<pid>/stat, so the server must be local), per
checkout; checkouts per web CPU second and per PostgreSQL CPU second (what one busy core of
each gives); WAL bytes per checkout (pg_current_wal_lsn before and after: the whole server's,
so other databases' writes on a shared server count too); and the database's server
connections (pg_stat_activity), at most and at most inside a transaction.

Runs on demand only, bounded in time, traffic to 127.0.0.1 only:

    .venv/bin/python bench/fleet.py [--registers 16] [--workers 4] [--seconds 20] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg2
from harness import bench_database, environment, wait_until_serving  # repository on sys.path
from sqlalchemy.engine import make_url

from checkout import HttpRegister, play, seed, summary  # noqa: E402  (bench/checkout.py)
from machine_cpu import CpuMeter  # noqa: E402  (bench/machine_cpu.py)
from testbed.fleet import ThrowawayNginx, ThrowawayPgBouncer  # noqa: E402
from testbed.ports import free_port  # noqa: E402
from testbed.procfile import VENV_BIN, ProcfileProcess, children, procfile_lines  # noqa: E402

def tree(pid: int) -> list[int]:
    found = [pid]
    for child in children(pid):
        found += tree(child)
    return found


class DatabaseWatch:
    """The database's backends (their CPU) and its connections, sampled while the load runs,
    on a connection of its own straight to PostgreSQL (not counted)."""

    def __init__(self, dsn: str, database: str):
        self.connection = psycopg2.connect(dsn)
        self.connection.autocommit = True
        self.database = database
        self.backends = CpuMeter(self._backend_pids)
        self.most_connections = self.most_in_transaction = 0
        self._stop = threading.Event()

    def _query(self, sql: str, *params):
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def _backend_pids(self) -> list[int]:
        return [pid for (pid,) in self._query(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            self.database)]

    def wal_lsn(self) -> str:
        return self._query("SELECT pg_current_wal_lsn()::text")[0][0]

    def wal_bytes_since(self, lsn: str) -> int:
        return int(self._query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", lsn)[0][0])

    def _watch(self) -> None:
        while not self._stop.wait(0.25):
            self.backends.sample()
            total, busy = self._query(
                "SELECT count(*), count(*) FILTER (WHERE state IN ('active', 'idle in transaction'))"
                " FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                self.database)[0]
            self.most_connections = max(self.most_connections, total)
            self.most_in_transaction = max(self.most_in_transaction, busy)

    def __enter__(self) -> "DatabaseWatch":
        self.backends.start()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.thread.join()

    def close(self) -> None:
        self.connection.close()


def web_instance(stack: ExitStack, folder: Path, name: str, database_url: str,
                 workers: int) -> tuple[int, ProcfileProcess]:
    """The Procfile's `web` line with `workers` workers on a free port, serving."""
    port = free_port()
    # The bench's settings, with the virtualenv's programs first on PATH as a platform has them.
    env = environment(database_url, PORT=str(port), WEB_CONCURRENCY=str(workers),
                      PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    process = ProcfileProcess(name, procfile_lines()["web"], env, folder).start()
    stack.callback(process.stop)
    try:
        wait_until_serving(port, timeout=60)
    except RuntimeError:
        raise RuntimeError(f"{name} did not serve:\n{process.tail()}") from None
    return port, process


def serve(stack: ExitStack, setup: str, folder: Path, url: str, database: str,
          workers: int) -> tuple[int, dict[str, CpuMeter]]:
    """Starts one setup; the port the registers call and a CPU meter per kind of process."""
    if setup == "direct":
        port, web = web_instance(stack, folder, "direct", url, workers)
        return port, {"web": CpuMeter(lambda: tree(web.pid))}
    bouncer = ThrowawayPgBouncer(folder, make_url(url).port or 5432, database)
    bouncer.start()
    stack.callback(bouncer.stop)
    instances = [web_instance(stack, folder, f"fleet-{i}", bouncer.url, workers // 2)
                 for i in range(2)]
    nginx = ThrowawayNginx(folder, [port for port, _ in instances])
    nginx.start()
    stack.callback(nginx.stop)
    return nginx.port, {
        "web": CpuMeter(lambda: [pid for _, web in instances for pid in tree(web.pid)]),
        "nginx": CpuMeter(lambda: tree(nginx.process.pid)),
        "pgbouncer": CpuMeter(lambda: tree(bouncer.process.pid))}


def measure(setup: str, url: str, dsn: str, database: str, shop, args) -> dict:
    # The folder outlives the processes in it: the stack closes first.
    with tempfile.TemporaryDirectory(prefix=f"bench-{setup}-") as folder, ExitStack() as stack:
        folder = Path(folder)
        folder.chmod(0o755)  # PgBouncer runs as postgres and reads its files here
        port, meters = serve(stack, setup, folder, url, database, args.workers)

        def registers():
            return [lambda r=r: HttpRegister(port, shop.key, r, [r.customer_id])
                    for r in shop.registers[:args.registers]]

        play(registers(), seconds=3, processes=args.processes)  # warm up: pools, plans
        watch = DatabaseWatch(dsn, database)
        stack.callback(watch.close)
        lsn = watch.wal_lsn()
        for meter in meters.values():
            meter.start()
        with watch:
            tally, elapsed = play(registers(), args.seconds, processes=args.processes)
        cpu = {name: meter.spent() for name, meter in meters.items()}
        cpu["postgres"] = watch.backends.spent()
        wal = watch.wal_bytes_since(lsn)
    done = max(tally.checkouts, 1)
    result = summary(tally, elapsed)
    result.update({
        "web_workers": args.workers, "instances": 1 if setup == "direct" else 2,
        "cpu_ms_per_checkout": {name: round(seconds * 1000 / done, 2)
                                for name, seconds in cpu.items()},
        "checkouts_per_web_cpu_second": round(done / cpu["web"], 1) if cpu["web"] else None,
        "checkouts_per_postgres_cpu_second":
            round(done / cpu["postgres"], 1) if cpu["postgres"] else None,
        "wal_bytes_per_checkout": round(wal / done),
        "server_connections_most": watch.most_connections,
        "server_connections_in_transaction_most": watch.most_in_transaction,
    })
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--registers", type=int, default=16)
    parser.add_argument("--workers", type=int, default=4,
                        help="gunicorn workers in all: one instance direct, half each in the fleet")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=2, help="of each setup, alternated")
    parser.add_argument("--processes", type=int, default=4, help="load generator processes")
    parser.add_argument("--extra-customers", type=int, default=5_000)
    parser.add_argument("--history", type=int, default=5_000,
                        help="past checkouts seeded before measuring")
    args = parser.parse_args()
    assert args.workers % 2 == 0, "the fleet splits the workers over two instances"
    report = {"registers": args.registers, "gunicorn_workers": args.workers,
              "seconds": args.seconds, "cores": os.cpu_count(),
              "load_average_at_start": os.getloadavg()}
    with bench_database() as url:
        database = make_url(url).database
        dsn = url.replace("postgresql+psycopg2://", "postgresql://")
        shop = seed(url, args.registers, args.extra_customers, args.history)
        for round_ in range(args.rounds):
            for setup in ("direct", "fleet"):
                label = f"round {round_ + 1} {setup}"
                report[label] = measure(setup, url, dsn, database, shop, args)
                print(json.dumps({label: report[label]}), flush=True)
    report["load_average_at_end"] = os.getloadavg()
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
