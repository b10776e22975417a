"""The database's share of a checkout: where PostgreSQL's time and WAL go, statement by
statement, at 16 registers (docs/performance.md, "The database's share of a checkout").

Starts a PostgreSQL of its own (the machine's, in a temporary directory, as
testbed/backing_services.py does) with `pg_stat_statements` preloaded, so every WAL byte
in a window is the checkouts' own. One gunicorn (the Procfile's `web` line) serves 16 registers
(bench/checkout.py's open, quote, hold, commit and a return every tenth), `--checkouts` each;
each window starts at a CHECKPOINT, so the full-page images a checkout pays after every
checkpoint are in the figures, and as many checkouts share them in every window whatever the
machine's speed (the WAL's records' own bytes do not depend on it at all).

Per window: the CPU gunicorn and the database's backends spent a checkout; WAL bytes, records
and full-page images per checkout (pg_stat_wal), and by kind of record the records' own bytes
and the images' (pg_waldump --stats); per statement (the steps
that send it, found by one register playing ten checkouts a request at a time) calls, time,
rows, WAL bytes and full-page images (pg_stat_statements); per table inserts, updates and HOT
updates (pg_stat_user_tables); per index its size and scans.

With `--before REVISION` a second database, migrated only up to REVISION (an earlier schema:
the code is the same), takes turns with the current one; with `--wal-compression` each
schema is measured again with `wal_compression=lz4` (an operator's setting, docs/deployment.md).

    .venv/bin/python bench/database_share.py [--before 0021_program_tiers_changed_at]
        [--wal-compression] [--rounds 2] [--checkouts 40] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg2
from checkout import RETURN_EVERY, HttpRegister, Tally, play, seed
from fleet import DatabaseWatch, tree, web_instance
from harness import ROOT  # noqa: F401  (puts the repository on sys.path)
from machine_cpu import CpuMeter

from app.config import normalise_database_url
from app.database.migrate import upgrade
from testbed.backing_services import ThrowawayPostgres

SERVER_SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    # No checkpoint inside a window but the one it starts with.
    "checkpoint_timeout": "1h", "max_wal_size": "20GB",
    "pg_stat_statements.track_planning": "on",  # planning is CPU a statement costs too
}
THIS_DATABASE = " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"


class Statistics:
    """Reads the server's counters on a connection of its own to one database, which they do
    not count; the statements are that database's."""

    def __init__(self, dsn: str):
        self.connection = psycopg2.connect(dsn)
        self.connection.autocommit = True
        self.run("SET pg_stat_statements.track = 'none'")

    def run(self, sql: str, *params) -> list[tuple]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def wal(self) -> dict:
        lsn, records, fpi, size = self.run(
            "SELECT pg_current_wal_lsn()::text, wal_records, wal_fpi, wal_bytes FROM pg_stat_wal")[0]
        return {"lsn": lsn, "records": records, "fpi": fpi, "bytes": int(size)}

    def statement_calls(self) -> dict[int, int]:
        return dict(self.run("SELECT queryid, calls FROM pg_stat_statements" + THIS_DATABASE))

    def statements(self) -> list[tuple]:
        return self.run(
            "SELECT queryid, regexp_replace(query, '\\s+', ' ', 'g'), calls, total_exec_time,"
            " total_plan_time, rows, wal_bytes, wal_fpi FROM pg_stat_statements" + THIS_DATABASE
            + " ORDER BY total_exec_time DESC")

    def tables(self) -> dict[str, tuple]:
        return {name: rest for name, *rest in self.run(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables")}

    def indexes(self) -> dict[str, tuple]:
        return {name: rest for name, *rest in self.run(
            "SELECT indexrelname, relname, pg_relation_size(indexrelid), idx_scan"
            " FROM pg_stat_user_indexes")}

    def close(self) -> None:
        self.connection.close()


class StepTally(Tally):
    """A tally that notes which statements each step sent (one register, nothing else busy)."""

    def __init__(self, statistics: Statistics):
        super().__init__()
        self.statistics, self.steps_of = statistics, {}

    def timer(self, step: str):
        before, done = self.statistics.statement_calls(), super().timer(step)

        def noted():
            done()
            for queryid, calls in self.statistics.statement_calls().items():
                if calls > before.get(queryid, 0):
                    self.steps_of.setdefault(queryid, set()).add(step)
        return noted


def waldump(server: ThrowawayPostgres, start: str, end: str) -> dict[str, dict]:
    """Bytes of WAL between two positions by kind of record: the records' own and their
    full-page images'."""
    out = subprocess.run([str(server.bin / "pg_waldump"), "--stats=record", "-p",
                          str(server.data / "pg_wal"), "-s", start, "-e", end],
                         capture_output=True, text=True, check=True).stdout
    # "Heap/INSERT   1022 ( 14.75)   363605 ( 27.88)   0 (  0.00) ...": count, record, FPI
    row = re.compile(r"^(\S+/\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)")
    return {kind: {"records": int(n), "record_bytes": int(size), "fpi_bytes": int(fpi)}
            for kind, n, size, fpi in (match.groups() for match in map(row.match, out.splitlines())
                                       if match)}


def window(server, database: str, url: str, shop, args) -> dict:
    """One measured window on one database: the figures per checkout."""
    dsn = url.replace("postgresql+psycopg2://", "postgresql://")
    statistics = Statistics(dsn)
    with tempfile.TemporaryDirectory(prefix="bench-share-") as folder, ExitStack() as stack:
        port, web = web_instance(stack, Path(folder), "direct", url, args.workers)
        web_cpu = CpuMeter(lambda: tree(web.pid))

        def registers():
            return [lambda r=r: HttpRegister(port, shop.key, r, [r.customer_id])
                    for r in shop.registers[:args.registers]]

        play(registers(), seconds=3, processes=args.processes)  # warm up: pools, plans
        statistics.run("CHECKPOINT")
        statistics.run("SELECT pg_stat_statements_reset()")
        tables, indexes, wal = statistics.tables(), statistics.indexes(), statistics.wal()
        watch = DatabaseWatch(dsn, database)
        stack.callback(watch.close)
        watch.connection.cursor().execute("SET pg_stat_statements.track = 'none'")
        web_cpu.start()
        with watch:
            tally, elapsed = play(registers(), args.seconds, processes=args.processes,
                                  max_checkouts=args.checkouts)
        wal_after = statistics.wal()
        cpu, web_seconds = watch.backends.spent(), web_cpu.spent()
        time.sleep(2)  # backends report their table counters within a second of going idle
        statements, tables_after = statistics.statements(), statistics.tables()
        indexes_after = statistics.indexes()
        steps = StepTally(statistics)
        one = HttpRegister(port, shop.key, shop.registers[args.registers], [
            shop.registers[args.registers].customer_id])
        for iteration in range(RETURN_EVERY):
            one.checkout(steps, iteration, pause=0)
        statistics.close()
    done = max(tally.checkouts, 1)
    per = lambda value: round(value / done, 2)
    by_record = waldump(server, wal["lsn"], wal_after["lsn"])
    return {
        "checkouts": tally.checkouts, "checkouts_per_second": round(tally.checkouts / elapsed, 1),
        "errors": tally.errors,
        "web_cpu_ms_per_checkout": round(web_seconds * 1000 / done, 2),
        "postgres_cpu_ms_per_checkout": round(cpu * 1000 / done, 2),
        "checkouts_per_postgres_cpu_second": round(done / cpu, 1) if cpu else None,
        "wal_bytes_per_checkout": round((wal_after["bytes"] - wal["bytes"]) / done),
        "wal_records_per_checkout": per(wal_after["records"] - wal["records"]),
        "full_page_images_per_checkout": per(wal_after["fpi"] - wal["fpi"]),
        # The records' own bytes do not depend on when the last checkpoint was; the images do.
        "wal_record_bytes_per_checkout": round(
            sum(kind["record_bytes"] for kind in by_record.values()) / done),
        "wal_image_bytes_per_checkout": round(
            sum(kind["fpi_bytes"] for kind in by_record.values()) / done),
        "wal_by_record_per_checkout": {
            kind: {name: per(value) for name, value in figures.items()}
            for kind, figures in by_record.items()},
        "statements": [
            {"steps": sorted(steps.steps_of.get(queryid, ())), "statement": text,
             "calls_per_checkout": per(calls), "total_ms_per_checkout": per(total),
             "plan_ms_per_checkout": per(plan), "mean_ms": round(total / calls, 3) if calls else None,
             "rows_per_call": round(rows / calls, 2) if calls else None,
             "wal_bytes_per_checkout": per(int(wal_bytes)), "fpi_per_checkout": per(fpi)}
            for queryid, text, calls, total, plan, rows, wal_bytes, fpi in statements],
        "tables": {
            name: {"inserts_per_checkout": per(ins - tables[name][0]),
                   "updates_per_checkout": per(upd - tables[name][1]),
                   "hot_updates_per_checkout": per(hot - tables[name][2])}
            for name, (ins, upd, hot) in tables_after.items()
            if (ins, upd) != tuple(tables.get(name, (ins, upd, 0))[:2])},
        "indexes": {name: {"table": table, "bytes": size,
                           "scans_per_checkout": per(scans - indexes.get(name, (0, 0, scans))[2])}
                    for name, (table, size, scans) in sorted(indexes_after.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--registers", type=int, default=16)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--seconds", type=float, default=120, help="at most, a window")
    parser.add_argument("--checkouts", type=int, default=40,
                        help="a register's in a window: the same count after each CHECKPOINT, "
                             "so the full-page images a checkout pays compare between windows")
    parser.add_argument("--rounds", type=int, default=2, help="of each schema, alternated")
    parser.add_argument("--processes", type=int, default=4, help="load generator processes")
    parser.add_argument("--extra-customers", type=int, default=5_000)
    parser.add_argument("--history", type=int, default=5_000,
                        help="past checkouts seeded before measuring")
    parser.add_argument("--before", help="also measure a database migrated only up to this "
                                         "revision, in turns with the current schema")
    parser.add_argument("--wal-compression", action="store_true",
                        help="measure each schema with wal_compression=lz4 too")
    parser.add_argument("--json", help="write the whole report to this file")
    args = parser.parse_args()
    report = {"registers": args.registers, "seconds": args.seconds}
    with tempfile.TemporaryDirectory(prefix="bench-postgres-") as folder:
        server = ThrowawayPostgres(Path(folder), SERVER_SETTINGS)
        server.start()
        try:
            admin = psycopg2.connect(server.url)
            admin.autocommit = True
            schemas = {"current": "heads", **({"before": args.before} if args.before else {})}
            databases = {}
            for label, revision in schemas.items():
                admin.cursor().execute(f'CREATE DATABASE "bench_{label}"')
                url = normalise_database_url(server.url.rsplit("/", 1)[0] + f"/bench_{label}")
                upgrade(url, revision)
                with psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://")) as c:
                    c.cursor().execute("CREATE EXTENSION pg_stat_statements")
                databases[label] = (url, seed(url, args.registers + 1, args.extra_customers,
                                              args.history))
            compressions = ("off", "lz4") if args.wal_compression else ("off",)
            for round_ in range(args.rounds):
                for compression in compressions:
                    admin.cursor().execute(f"ALTER SYSTEM SET wal_compression = {compression}")
                    admin.cursor().execute("SELECT pg_reload_conf()")
                    for label, (url, shop) in databases.items():
                        name = f"round {round_ + 1} {label} wal_compression={compression}"
                        report[name] = window(server, f"bench_{label}", url, shop, args)
                        print(json.dumps({name: {key: value for key, value in report[name].items()
                                                 if not isinstance(value, (dict, list))}}),
                              flush=True)
            admin.close()
        finally:
            server.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
