"""Gift-card lookup at the register, and the customer's card page and wallet pass, under
gunicorn against PostgreSQL; the lookup with the miss counter in the database and in Redis.

    .venv/bin/python bench/gift_cards.py [--clients 16] [--seconds 10]
                                         [--redis redis://127.0.0.1:6379/15]
"""
from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, bench_database, closed_loop, environment, flask_command, gunicorn
from sqlalchemy import create_engine, select

CARDS = 1000


def fetch(client, name: str, path: str) -> None:
    """A GET whose body is not JSON (a page, a pass), timed like the harness's own calls."""
    started = time.perf_counter()
    try:
        client.connection.request("GET", path, headers=client.headers)
        response = client.connection.getresponse()
        response.read()
    except (OSError, http.client.HTTPException):
        client.connection.close()
        client.connection = http.client.HTTPConnection("127.0.0.1", client.port, timeout=30)
        client.errors += 1
        return
    client.latencies.setdefault(name, []).append((time.perf_counter() - started) * 1000)
    client.errors += response.status >= 400


def issue_codes(url: str, company_id: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "flask", "gift-cards", "issue", company_id, "--amount", "1500",
         "--count", str(CARDS)],
        cwd=ROOT, check=True, capture_output=True, text=True, env=environment(url))
    return result.stdout.strip().splitlines()[-CARDS:]


def seed_customer(url: str, company_id: str) -> str:
    """One customer with a balance and twelve published stores; returns the card token."""
    from app import create_app
    from app.config import Settings
    from testbed.cards import make_customer, make_store

    app = create_app(Settings(database_url=url, api_key_pepper="bench-pepper",
                              log_level="WARNING", development=False))
    session = app.extensions["session_factory"]()
    for i in range(12):
        make_store(session, company_id, f"Store {i:02d}", latitude=55.7 + i / 100,
                   longitude=37.6 + i / 100)
    token = make_customer(session, company_id, available=123450, pending=2000).card_token
    session.close()
    app.extensions["engine"].dispose()
    return token


def company_id_of(url: str) -> str:
    from app.config import normalise_database_url
    from app.models import Company
    engine = create_engine(normalise_database_url(url))
    with engine.connect() as connection:
        found = connection.scalar(select(Company.id))
    engine.dispose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--workers", type=int, default=None,
                        help="gunicorn's processes (default: the Procfile's)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    args = parser.parse_args()
    with bench_database() as url:
        key = flask_command(url, "demo")
        company_id = company_id_of(url)
        codes = issue_codes(url, company_id)
        token = seed_customer(url, company_id)
        headers = [{"Authorization": f"Bearer {key}"}] * args.clients
        folder = Path(tempfile.mkdtemp())
        from testbed.cards import PASS_TYPE_ID, TEAM_ID, make_pass_certificates
        certificates = make_pass_certificates(folder)
        wallet_env = {"WALLET_CERT_FILE": str(certificates.cert_file),
                      "WALLET_KEY_FILE": str(certificates.key_file),
                      "WALLET_WWDR_FILE": str(certificates.wwdr_file),
                      "WALLET_PASS_TYPE_ID": PASS_TYPE_ID, "WALLET_TEAM_ID": TEAM_ID}

        def company(client, index, iteration, pause):
            client.call("GET /v1/company", "GET", "/v1/company")

        def lookup(client, index, iteration, pause):
            code = codes[(index * 7919 + iteration) % len(codes)]
            client.call("GET /v1/gift-cards/{code}", "GET", f"/v1/gift-cards/{code}")

        def card_page(client, index, iteration, pause):
            fetch(client, "GET /cards/{token}", f"/cards/{token}")

        def card_pass(client, index, iteration, pause):
            fetch(client, "GET /cards/{token}.pkpass", f"/cards/{token}.pkpass")

        runs = [("baseline: GET /v1/company", {}, company),
                ("lookup, database counter", {}, lookup),
                ("lookup, redis counter", {"REDIS_URL": args.redis}, lookup),
                ("card page", wallet_env, card_page), ("card pass", wallet_env, card_pass)]
        for label, env, scenario in runs:
            with gunicorn(url, workers=args.workers, **env) as port:
                closed_loop(scenario, port, headers, seconds=2)  # warm up
                result = closed_loop(scenario, port, headers, seconds=args.seconds)
                print(json.dumps({"run": label, **result.summary()}))


if __name__ == "__main__":
    main()
