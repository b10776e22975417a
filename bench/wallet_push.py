"""Wallet pushes (docs/api.md#wallet): how many pushes one worker process makes per second against a
local HTTP/2 push service (testbed/push_service.py, the stand-in for APNs), and what a commit
costs in process CPU with and without devices registered for the customer's pass (the same
within noise: the push is the worker's, after commit).

    .venv/bin/python bench/wallet_push.py --devices 500 --commits 300
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from harness import PEPPER, bench_database  # repository on sys.path

from app import create_app  # noqa: E402
from app.config import Settings  # noqa: E402
from app.operations.work import transaction  # noqa: E402
from testbed.cards import make_customer, make_pass_certificates  # noqa: E402
from testbed.phone import Phone  # noqa: E402
from testbed.push_service import PushService  # noqa: E402
from testbed.tenants import make_tenant  # noqa: E402
from worker import pushes  # noqa: E402


def adjust(client, tenant, customer_id, n):
    response = client.post(f"/v1/customers/{customer_id}/reward-adjustments",
                           json={"amount": "1.00", "basis": "bench"},
                           headers=tenant.headers(Idempotency_Key=f"bench-{uuid.uuid4().hex}"))
    assert response.status_code == 201, response.get_data(as_text=True)


def commit_cpu(client, tenant, customers, commits) -> float:
    """Median process CPU (ms) of one adjustment request, over `commits` of them."""
    costs = []
    for n in range(commits):
        started = time.process_time()
        adjust(client, tenant, customers[n % len(customers)], n)
        costs.append((time.process_time() - started) * 1000)
    return statistics.median(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--devices", type=int, default=300, help="registered devices (one a pass)")
    parser.add_argument("--commits", type=int, default=200, help="commits per side of the comparison")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="wallet-bench-"))
    certificates = make_pass_certificates(folder)
    service = PushService(folder, certificates.wwdr_file).start()
    try:
        with bench_database() as url:
            app = create_app(Settings(
                database_url=url, api_key_pepper=PEPPER, log_level="WARNING", development=False,
                api_rate_limit=None, wallet=certificates.wallet, apns_url=service.url,
                apns_ca_bundle=str(service.ca_file)))
            tenant = make_tenant(app)
            client = app.test_client()
            with transaction(app) as db:
                plain = [make_customer(db, tenant.company_id, available=100000).id
                         for _ in range(50)]
                holders = [make_customer(db, tenant.company_id, available=100000)
                           for _ in range(args.devices)]
            for n, customer in enumerate(holders):
                assert Phone.adding(client, customer, device=f"d{n}",
                                    push_token=f"{n:08x}").register().status_code == 201
            holder_ids = [customer.id for customer in holders]
            report = {}
            # Alternate the sides so that drift (cache, autovacuum) falls on both alike.
            without, with_devices = [], []
            for _ in range(3):
                without.append(commit_cpu(client, tenant, plain, args.commits // 3))
                with_devices.append(commit_cpu(client, tenant, holder_ids, args.commits // 3))
            report["commit CPU ms, no devices"] = round(statistics.median(without), 3)
            report["commit CPU ms, a registered device"] = round(statistics.median(with_devices), 3)
            for customer_id in holder_ids:  # every pass changed once more: one push each
                adjust(client, tenant, customer_id, "last")
            started = time.perf_counter()
            with app.app_context():
                made = pushes.push_waiting()
            elapsed = time.perf_counter() - started
            report["pushes"] = made
            report["pushes per second, one worker"] = round(made / elapsed, 1)
            report["received"] = len(service.received)
            print(json.dumps(report, indent=2))
            app.extensions["engine"].dispose()
    finally:
        service.stop()


if __name__ == "__main__":
    main()
