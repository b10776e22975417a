"""GET /v1/company under gunicorn against PostgreSQL: what authentication and one read cost.

    .venv/bin/python bench/company.py [--clients 16] [--seconds 10]

With Debian's `wrk` installed (apt-get install wrk) the same two endpoints are also loaded by
wrk, whose C client takes far less of the two cores than the Python generator does.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess

from harness import bench_database, closed_loop, flask_command, gunicorn


def get_company(client, index, iteration, pause):
    client.call("GET /v1/company", "GET", "/v1/company")


def get_health(client, index, iteration, pause):
    client.call("GET /health", "GET", "/health")


def wrk(port: int, path: str, key: str | None, clients: int, seconds: float) -> dict:
    command = ["wrk", "-t2", f"-c{clients}", f"-d{int(seconds)}s", "--latency",
               f"http://127.0.0.1:{port}{path}"]
    if key:
        command[1:1] = ["-H", f"Authorization: Bearer {key}"]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p50 = re.search(r"^\s+50%\s+(\S+)", output, re.MULTILINE).group(1)
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.MULTILINE).group(1)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {"client": "wrk", "path": path, "clients": clients, "per_second": rate, "p50": p50,
            "p99": p99, "non_2xx": int(errors.group(1)) if errors else 0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--workers", type=int, default=None,
                        help="gunicorn's processes (default: the Procfile's)")
    args = parser.parse_args()
    with bench_database() as url:
        key = flask_command(url, "demo")
        headers = [{"Authorization": f"Bearer {key}"}] * args.clients
        with gunicorn(url, workers=args.workers) as port:
            closed_loop(get_company, port, headers, seconds=2)  # warm up
            for scenario in (get_health, get_company):
                result = closed_loop(scenario, port, headers, seconds=args.seconds)
                print(json.dumps(result.summary()))
            if shutil.which("wrk"):
                for path, path_key in (("/health", None), ("/v1/company", key)):
                    print(json.dumps(wrk(port, path, path_key, args.clients, args.seconds)))


if __name__ == "__main__":
    main()
