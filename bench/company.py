"""GET /v1/company under gunicorn against PostgreSQL: what authentication and one read cost.

    .venv/bin/python bench/company.py [--clients 16] [--seconds 10]
"""
from __future__ import annotations

import argparse
import json

from harness import bench_database, closed_loop, flask_command, gunicorn


def get_company(client, index, iteration, pause):
    client.call("GET /v1/company", "GET", "/v1/company")


def get_health(client, index, iteration, pause):
    client.call("GET /health", "GET", "/health")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    with bench_database() as url:
        key = flask_command(url, "demo")
        headers = [{"Authorization": f"Bearer {key}"}] * args.clients
        with gunicorn(url, workers=args.workers) as port:
            closed_loop(get_company, port, headers, seconds=2)  # warm up
            for scenario in (get_health, get_company):
                result = closed_loop(scenario, port, headers, seconds=args.seconds)
                print(json.dumps(result.summary()))


if __name__ == "__main__":
    main()
