"""docs/performance.md's tables of the database's share of a checkout, from one window of
bench/database_share.py's report (its `--json` file):

    .venv/bin/python bench/share_tables.py REPORT.json ["round 1 current wal_compression=off"]
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_VERB = re.compile(r"^\s*(WITH|SELECT|INSERT|UPDATE|DELETE|BEGIN|COMMIT)", re.IGNORECASE)
_TABLES = re.compile(r"\b(?:FROM|JOIN|INTO|(?<!FOR )UPDATE)\s+(\w+)", re.IGNORECASE)
_WRITES = re.compile(r"\b(?:INSERT INTO|(?<!FOR )UPDATE)\s+(\w+)", re.IGNORECASE)
_FIRST_CTE = re.compile(r"^\s*WITH\s+(\w+)", re.IGNORECASE)


def statement_name(text: str) -> str:
    """A statement's verb and the tables it names, in order; a WITH by its first part's name
    and the tables it writes: what the table shows of it."""
    verb = (_VERB.match(text) or [None, "?"])[1].upper()
    if verb == "WITH":
        writes = list(dict.fromkeys(_WRITES.findall(text)))
        return f"WITH {_FIRST_CTE.match(text)[1]} … (writes {', '.join(writes) or 'nothing'})"
    tables = list(dict.fromkeys(_TABLES.findall(text)))
    return f"{verb} {', '.join(tables)}".strip()


def statements_table(window: dict) -> str:
    rows = [("| steps | statement | calls | ms executing | ms planning | rows/call | WAL bytes "
             "| FPI |"), "|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in window["statements"]:
        if not s["steps"] or s["calls_per_checkout"] < 0.05:
            continue  # the bench's own, or not the registers'
        rows.append(f"| {', '.join(s['steps'])} | {statement_name(s['statement'])} "
                    f"| {s['calls_per_checkout']} | {s['total_ms_per_checkout']} "
                    f"| {s.get('plan_ms_per_checkout', '')} "
                    f"| {s['rows_per_call']} | {round(s['wal_bytes_per_checkout'])} "
                    f"| {s['fpi_per_checkout']} |")
    return "\n".join(rows)


def tables_table(window: dict) -> str:
    sizes: dict[str, list] = {}
    for name, index in window["indexes"].items():
        sizes.setdefault(index["table"], []).append((name, index["bytes"]))
    rows = ["| table | inserts | updates | of them HOT | indexes (KB) |", "|---|---:|---:|---:|---|"]
    for table, t in sorted(window["tables"].items(), key=lambda kv: -kv[1]["updates_per_checkout"]
                           - kv[1]["inserts_per_checkout"]):
        indexes = ", ".join(f"{name} {size // 1024}" for name, size in sorted(sizes.get(table, [])))
        rows.append(f"| {table} | {t['inserts_per_checkout']} | {t['updates_per_checkout']} "
                    f"| {t['hot_updates_per_checkout']} | {indexes} |")
    return "\n".join(rows)


def main() -> None:
    report = json.loads(Path(sys.argv[1]).read_text())
    label = sys.argv[2] if len(sys.argv) > 2 else next(k for k, v in report.items()
                                                        if isinstance(v, dict))
    print(f"{label}\n\n{statements_table(report[label])}\n\n{tables_table(report[label])}")


if __name__ == "__main__":
    main()
