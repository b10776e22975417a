"""A register back online with its queue: `--sales` sales it made offline, sent one after
another (`POST /v1/offline-sales`), beside as many online sales (open → quote → commit) from
the same register, in one run on PostgreSQL under gunicorn. The two kinds take turns in
blocks of `--block`, so the machine's drift falls on both alike.

Also counts, in this process (the Flask test client, a SQLAlchemy listener on the engine),
what each request sends the database: strings sent (round trips) and the statements in them
(the unit of work joins its deferred writes to the next statement), for the commit alone, the
whole online sale and the offline sale.

    .venv/bin/python bench/offline_sales.py [--sales 1000] [--block 100]
"""
from __future__ import annotations

import argparse
import json
import time
import uuid
from datetime import timedelta

from harness import Client, bench_database, gunicorn
from sqlalchemy import event

from checkout import LINES, _bench_app, seed  # noqa: E402  (bench/checkout.py)
from app.database.engine import utcnow  # noqa: E402
from app.wire import format_timestamp  # noqa: E402

SAMPLES = 50  # requests of each kind counted in process


def offline_body(register, sold_at) -> dict:
    return {"externalReceiptId": f"OFF-{uuid.uuid4().hex}", "soldAt": format_timestamp(sold_at),
            "customer": {"customerId": register.customer_id},
            "cashier": {"externalId": register.cashier_id, "name": "Cashier"}, "lines": LINES}


def count_statements(url: str, shop) -> dict:
    """Mean strings sent and statements in them per request: commit, online sale, offline."""
    app = _bench_app(url)
    client, register = app.test_client(), shop.registers[0]
    headers = {"Authorization": f"Bearer {shop.key}", "X-Loyalty-Pos-Key": register.pos_key}
    sent: list[str] = []
    event.listen(app.extensions["engine"], "before_cursor_execute",
                 lambda conn, cursor, statement, *rest: sent.append(statement))

    def post(path, body):
        response = client.post(path, json=body,
                               headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    def counted(call) -> tuple[int, int]:
        sent.clear()
        call()
        parts = [part for statement in sent for part in statement.split(";\n")
                 if part.strip() not in ("BEGIN", "COMMIT")]
        return len(sent), len(parts)

    tallies = {"commit": [], "online sale": [], "offline sale": []}
    for _ in range(SAMPLES):
        answers: dict = {}
        steps = [counted(lambda: answers.update(session=post("/v1/checkout-sessions", {
                     "externalReceiptId": f"ON-{uuid.uuid4().hex}",
                     "customerId": register.customer_id,
                     "cashier": {"externalId": register.cashier_id, "name": "Cashier"}}))),
                 counted(lambda: answers.update(quote=post(
                     f"/v1/checkout-sessions/{answers['session']['id']}/quote",
                     {"lines": LINES}))),
                 counted(lambda: post(f"/v1/checkout-sessions/{answers['session']['id']}/commit",
                                      {"quoteId": answers["quote"]["id"]}))]
        tallies["commit"].append(steps[-1])
        tallies["online sale"].append(tuple(map(sum, zip(*steps))))
        tallies["offline sale"].append(counted(lambda: post(
            "/v1/offline-sales", offline_body(register, utcnow() - timedelta(minutes=40)))))
    app.extensions["engine"].dispose()
    return {name: {"round_trips": max(t for t, _ in values),
                   "statements": max(s for _, s in values)}
            for name, values in tallies.items()}


def timed_sales(port: int, shop, sales: int, block: int) -> dict:
    """Per-sale wall time of each kind, sent one after another by one register."""
    register = shop.registers[0]
    client = Client(port, {"Authorization": f"Bearer {shop.key}",
                           "X-Loyalty-Pos-Key": register.pos_key})
    seconds = {"online": [], "offline": []}
    failures = 0

    def post(name, path, body):
        status, answer = client.call(name, "POST", path, body,
                                     {"Idempotency-Key": uuid.uuid4().hex})
        if status != 201:
            raise RuntimeError(f"{path}: {status} {answer}")
        return answer

    def online():
        opened = post("open", "/v1/checkout-sessions", {
            "externalReceiptId": f"ON-{uuid.uuid4().hex}", "customerId": register.customer_id,
            "cashier": {"externalId": register.cashier_id, "name": "Cashier"}})
        quote = post("quote", f"/v1/checkout-sessions/{opened['id']}/quote", {"lines": LINES})
        post("commit", f"/v1/checkout-sessions/{opened['id']}/commit", {"quoteId": quote["id"]})

    # The queue: sales made one a minute over the last hours, oldest sent first.
    queue = [utcnow() - timedelta(minutes=sales + 5 - i) for i in range(sales)]
    for start in range(0, sales, block):
        for kind in ("online", "offline"):
            for i in range(start, min(start + block, sales)):
                began = time.perf_counter()
                try:
                    online() if kind == "online" else post(
                        "offline", "/v1/offline-sales", offline_body(register, queue[i]))
                except RuntimeError:
                    failures += 1
                    continue
                seconds[kind].append(time.perf_counter() - began)

    def figures(values):
        values = sorted(values)
        return {"sales": len(values), "total_s": round(sum(values), 2),
                "per_second": round(len(values) / sum(values), 1),
                "p50_ms": round(values[len(values) // 2] * 1000, 2),
                "p99_ms": round(values[int(len(values) * 0.99) - 1] * 1000, 2)}
    return {"failures": failures, **{kind: figures(values) for kind, values in seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sales", type=int, default=1000, help="sales of each kind")
    parser.add_argument("--block", type=int, default=100, help="sales of one kind in a turn")
    args = parser.parse_args()
    with bench_database() as url:
        shop = seed(url, registers=1, extra_customers=0)
        report = {"per_request": count_statements(url, shop)}
        with gunicorn(url) as port:
            report["one_after_another"] = timed_sales(port, shop, args.sales, args.block)
    online, offline = report["one_after_another"]["online"], report["one_after_another"]["offline"]
    counts = report["per_request"]
    report["offline_at_least_as_fast"] = offline["per_second"] >= online["per_second"]
    report["offline_no_more_statements_than_a_commit"] = (
        counts["offline sale"]["statements"] <= counts["commit"]["statements"]
        and counts["offline sale"]["round_trips"] <= counts["commit"]["round_trips"])
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
