"""Webhook delivery end to end: a real `python -m worker` process on real Redis, a real HTTPS
receiver on 127.0.0.1 (certified by a trustme CA), events from committed transactions, and
every signature checked with the reference `standardwebhooks` library."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest
from flask import request
from redis import Redis
from rq import Queue, Worker
from rq.registry import ScheduledJobRegistry
from sqlalchemy import select, update
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from app import create_app
from app.database.engine import request_session, utcnow
from app.models import Hold, OutboxEvent, WebhookDelivery
from app.operations.delivery_queue import dispatch_flag_key
from app.operations.delivery_queue import hand_over_events
from app.services.errors import Conflict
from app.services.webhooks.delivery import dispatch_pending
from app.services.webhooks.outbox import EVENT_TYPES, record_event
from app.wire import format_timestamp
from tests.conftest import TEST_PEPPER
from tests.lots import age_lots
from worker.__main__ import PERIODIC_JOB, periodic_lock_key

pytestmark = [pytest.mark.redis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 20.0
STARTUP_SECONDS = 30.0
TEST_SCHEDULE = "1,1"  # two retries: three attempts in all
ATTEMPTS = 3


# --- a real worker process ------------------------------------------------------------------

@dataclass
class WorkerProcess:
    process: subprocess.Popen
    log: Path
    allow_private: bool

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker and everything it started (its scheduler, any forked job), as a
        lost machine would."""
        for pid in [self.process.pid, *_descendants(self.process.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=10)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


class Workers:
    """`python -m worker` processes on the test queue, one at a time; a running one is reused
    by the next test that wants the same settings (starting one costs seconds)."""

    def __init__(self, settings, ca_bundle: str, log_dir: Path,
                 environment: dict[str, str] | None = None):
        self.settings = settings
        self.ca_bundle = ca_bundle
        self.log_dir = log_dir
        self.environment = environment or {}  # more settings (e.g. the wallet's)
        self.redis = Redis.from_url(settings.redis_url)
        self.queue = Queue(settings.rq_queue, connection=self.redis)
        self.started: list[WorkerProcess] = []

    def running(self, *, allow_private: bool = True) -> WorkerProcess:
        current = self.started[-1] if self.started else None
        if current and current.alive and current.allow_private == allow_private:
            return current
        if current:
            current.kill()
        return self._start(allow_private)

    def alongside(self) -> WorkerProcess:
        """One more worker on the queue beside the running one, as a deployment runs several."""
        self.running()
        return self._start(self.started[-1].allow_private, beside=True)

    def _start(self, allow_private: bool, beside: bool = False) -> WorkerProcess:
        if not beside:
            # A killed worker leaves its scheduler lock behind, and the periodic lock would
            # hold back the upkeep (with its outbox sweep) that a new worker runs at once.
            self.redis.delete(periodic_lock_key(self.settings.rq_queue),
                              f"rq:scheduler-lock:{self.settings.rq_queue}")
        env = {
            **os.environ,
            "DATABASE_URL": self.settings.database_url,
            "REDIS_URL": self.settings.redis_url,
            "RQ_QUEUE": self.settings.rq_queue,
            "API_KEY_PEPPER": TEST_PEPPER,
            "PUBLIC_BASE_URL": "https://cards.example.test",
            "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1" if allow_private else "",
            "WEBHOOK_CA_BUNDLE": self.ca_bundle,
            "WEBHOOK_RETRY_SCHEDULE": TEST_SCHEDULE,
            **self.environment,
        }
        log = self.log_dir / f"worker-{len(self.started)}.log"
        with log.open("wb") as output:
            process = subprocess.Popen([sys.executable, "-m", "worker"], cwd=ROOT, env=env,
                                       stdout=output, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        worker = WorkerProcess(process, log, allow_private)
        self.started.append(worker)
        # Start-up is not what the tests time: wait until it listens on the queue.
        eventually(lambda: any(w.pid == process.pid for w in Worker.all(queue=self.queue)),
                   "the worker starts", [worker], within=STARTUP_SECONDS)
        return worker

    def run_upkeep(self) -> None:
        """What the worker's timer does every interval: enqueue the periodic tasks."""
        self.queue.enqueue(PERIODIC_JOB)

    def stop_all(self) -> None:
        for worker in self.started:
            if worker.alive:
                worker.kill()

    def stop(self) -> None:
        self.stop_all()
        # A killed worker stays in RQ's registry until its keys expire, minutes later; the queue
        # is this test session's, and later tests (flask ops status) count the living workers.
        for registered in Worker.all(queue=self.queue):
            registered.register_death()
        for worker in self.started:
            if os.environ.get("SHOW_WORKER_LOG"):
                print(worker.log.read_text(errors="replace"))
        self.redis.close()


@pytest.fixture(scope="module")
def workers(settings, webhook_ca, tmp_path_factory):
    manager = Workers(settings, webhook_ca[1], tmp_path_factory.mktemp("workers"))
    manager.queue.empty()
    scheduled = ScheduledJobRegistry(queue=manager.queue)
    for job_id in scheduled.get_job_ids():
        scheduled.remove(job_id, delete_job=True)
    try:
        yield manager
    finally:
        manager.stop()


# --- arranging and observing ---------------------------------------------------------------

def eventually(condition, what: str, watched=(), within: float = WAIT_SECONDS):
    """Poll `condition` until it returns something truthy; fail with the workers' logs."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            logs = "\n".join(w.log.read_text(errors="replace")[-3000:] for w in watched)
            pytest.fail(f"not within {within:g} s: {what}\n{logs}")
        time.sleep(0.05)


def operator(app, *args: str) -> list[str]:
    result = app.test_cli_runner().invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def allow_loopback(app, host: str = "127.0.0.1") -> None:
    """The operator allows the receiver's loopback address, which only a deployment delivering
    to private addresses (tests) may."""
    permissive = create_app(replace(app.config["SETTINGS"], webhook_allow_private_addresses=True))
    operator(permissive, "webhooks", "allow-host", host)


def register(client, tenant, url: str, events=("*",)) -> tuple[str, str]:
    response = client.post("/v1/webhook-endpoints", json={"url": url, "events": list(events)},
                           headers=tenant.headers())
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"], response.get_json()["secret"]


def commit_event(app, company_id: str, event_type: str, data: dict, *, enqueue: bool = True) -> str:
    """Record an event in a committed transaction and, as a request does, enqueue it after."""
    session = app.extensions["session_factory"]()
    try:
        event = record_event(session, company_id, event_type, data)
        session.commit()
    finally:
        session.close()
    if enqueue:
        hand_over_events(app, [(company_id, event.id)])
    return event.id


def run_sql(app, statement) -> None:
    with app.extensions["session_factory"]() as session:
        session.execute(statement)
        session.commit()


def deliveries(app, **where) -> list[WebhookDelivery]:
    with app.extensions["session_factory"]() as session:
        query = select(WebhookDelivery).filter_by(**where).order_by(WebhookDelivery.created_at)
        return list(session.scalars(query))


def delivery_in(app, state: str, **where) -> WebhookDelivery | None:
    rows = deliveries(app, **where)
    return rows[0] if len(rows) == 1 and rows[0].state == state else None


def stored_events(app) -> dict[str, bytes]:
    """Each recorded event's payload, by event id."""
    with app.extensions["session_factory"]() as session:
        return {id_: payload.encode() for id_, payload in session.execute(
            select(OutboxEvent.id, OutboxEvent.payload))}


def _otp_event_id(app) -> str:
    with app.extensions["session_factory"]() as session:
        return session.scalar(select(OutboxEvent.id).where(OutboxEvent.type == "otp.code_issued"))


def verified(secret: str, hit) -> dict:
    return Webhook(secret).verify(hit.body, hit.headers)


def hits_at(receiver, path: str) -> list:
    return [hit for hit in list(receiver.hits) if hit.path == path]


# Events for the tests of delivery itself, recorded as the operations record them (the test
# above drives the operations); Cyrillic included: what is signed must be the stored bytes.
SAMPLE_DATA = {
    "customer.created": {"id": "c-1", "phone": "+79123456789", "firstName": "Иван",
                         "lastName": None, "createdAt": "2024-05-01T10:00:00.000Z",
                         "balance": {"available": "0.00", "pending": "0.00", "reserved": "0.00"}},
    "reward.adjusted": {"id": "a-1", "customerId": "c-1", "amount": "150.00", "basis": "подарок",
                        "balance": {"available": "150.00", "pending": "0.00", "reserved": "0.00"},
                        "createdAt": "2024-05-01T10:00:00.000Z"},
    "sale.committed": {"id": "sale-1", "checkoutSessionId": "s-1", "externalReceiptId": "R-1",
                       "customerId": "c-1", "state": "COMMITTED", "totalAmount": "300.00",
                       "redeemed": "20.50", "accrued": "13.97", "lines": [],
                       "receiptText": ["Списано: 20.50"],
                       "committedAt": "2024-05-01T10:02:00.000Z"},
    "catalog.synced": {"id": "sync-1", "storeId": "st-1", "received": 2, "created": 2, "updated": 0,
                       "removed": 0, "unchanged": 0, "syncedAt": "2024-05-01T09:00:00.000Z"},
}


# --- the tests ----------------------------------------------------------------------------

class Integrator:
    """The tenant's calls through the real API. Each response is closed, as the server closes
    it after sending: that is when a request hands its committed events to the queue."""

    def __init__(self, client, tenant):
        self.client = client
        self.tenant = tenant

    def call(self, method: str, path: str, body: dict | None = None, expect: int = 201) -> dict:
        response = self.client.open(path, method=method, json=body,
                                    headers=self.tenant.headers(Idempotency_Key=uuid.uuid4().hex))
        status, data = response.status_code, response.get_json()
        response.close()
        assert status == expect, (method, path, status, data)
        return data


def test_every_event_type_is_delivered_signed_and_filtered(app, client, tenant, receiver, workers):
    allow_loopback(app)
    _, everything_secret = register(client, tenant, receiver.url("/ok"))
    _, sales_secret = register(client, tenant, receiver.url("/target"),
                               ["sale.committed", "otp.code_issued"])
    worker = workers.running()
    api = Integrator(client, tenant)

    # Every event comes from the operation that emits it, through the API.
    program = api.call("PATCH", "/v1/program", {"tiers": [
        {"name": "Base", "minSpend": "0", "accrualPercent": "5"},
        {"name": "Silver", "minSpend": "100", "accrualPercent": "7"}]}, expect=200)
    customer = api.call("POST", "/v1/customers",
                        {"phone": "8 (912) 345-67-89", "firstName": "Иван"})
    challenge = api.call("POST", "/v1/otp-challenges",
                         {"phone": "+79001112233", "purpose": "ENROLLMENT"})
    adjustment = api.call("POST", f"/v1/customers/{customer['id']}/reward-adjustments",
                          {"amount": "500.00", "basis": "подарок"})
    store = api.call("POST", "/v1/stores", {"name": "Угловой", "address": "Ленина 1",
                                            "city": "Москва", "latitude": 55.75,
                                            "longitude": 37.61})
    terminal = api.call("POST", "/v1/terminals", {"storeId": store["id"], "name": "Register 1"})
    sync = api.call("POST", "/v1/catalog-syncs", {"storeId": store["id"], "items": [
        {"sku": "milk", "name": "Молоко", "price": "300.00"}]})
    lines = [{"lineId": "1", "sku": "milk", "quantity": "1", "price": "300.00", "amount": "300.00"}]

    def checkout_session(receipt: str) -> tuple[str, str]:
        opened = api.call("POST", "/v1/checkout-sessions", {
            "externalReceiptId": receipt, "customerId": customer["id"],
            "terminalId": terminal["id"], "cashier": {"externalId": "7", "name": "Мария"}})
        quote = api.call("POST", f"/v1/checkout-sessions/{opened['id']}/quote", {"lines": lines})
        return opened["id"], quote["id"]

    session_id, quote_id = checkout_session("R-1")
    hold_path = f"/v1/checkout-sessions/{session_id}/hold"
    api.call("POST", hold_path, {"quoteId": quote_id})
    api.call("DELETE", hold_path, {"reason": "cancelled"}, expect=200)
    api.call("POST", hold_path, {"quoteId": quote_id})
    sale = api.call("POST", f"/v1/checkout-sessions/{session_id}/commit", {"quoteId": quote_id})
    returned = api.call("POST", f"/v1/sales/{sale['id']}/returns",
                        {"lines": [{"lineId": "1", "quantity": "1"}]})
    # Promotional points for a day: within the program's 7 reminder days at once, so the next
    # touch (the hold below) reminds; aged past their end, the worker's upkeep expires them.
    promo = api.call("POST", f"/v1/customers/{customer['id']}/reward-adjustments", {
        "amount": "10.00", "basis": "promo",
        "expiresAt": format_timestamp(utcnow() + timedelta(days=1))})
    # A hold left to run out is expired by the worker's upkeep, which emits the event.
    expiring_id, expiring_quote = checkout_session("R-2")
    expiring = api.call("POST", f"/v1/checkout-sessions/{expiring_id}/hold",
                        {"quoteId": expiring_quote})
    run_sql(app, update(Hold).where(Hold.id == expiring["id"])
            .values(expires_at=utcnow() - timedelta(seconds=1)))
    session = app.extensions["session_factory"]()
    age_lots(session, tenant.company_id, customer["id"], timedelta(days=2))
    session.close()
    workers.run_upkeep()

    # The sale (210.00 paid) moved the customer up to Silver, its return back down to Base.
    expected = {"customer.created": 1, "otp.code_issued": 1, "reward.adjusted": 2,
                "catalog.synced": 1, "checkout.hold.created": 3, "checkout.hold.released": 1,
                "checkout.hold.expired": 1, "sale.committed": 1, "sale.returned": 1,
                "program.updated": 1, "customer.tier_changed": 2,
                "reward.expiring": 1, "reward.expired": 1}
    assert set(expected) == set(EVENT_TYPES)
    eventually(lambda: len(hits_at(receiver, "/ok")) == sum(expected.values())
               and len(hits_at(receiver, "/target")) == 2, "every event delivered", [worker])

    # Both endpoints' deliveries of the code have ended before it is dropped.
    eventually(lambda: json.loads(stored_events(app)[_otp_event_id(app)])
               ["data"]["code"] is None, "the delivered code dropped", [worker])
    stored = stored_events(app)
    received: dict[str, list[dict]] = {}
    for path, secret in (("/ok", everything_secret), ("/target", sales_secret)):
        for hit in hits_at(receiver, path):
            body = verified(secret, hit)
            kept = stored[hit.headers["webhook-id"]]
            # the code is sent, and kept no longer (docs/api.md#otp)
            if body["type"] == "otp.code_issued":
                assert json.loads(kept)["data"] == {**body["data"], "code": None}
                assert body["data"]["code"].encode() not in b"".join(stored.values())
            else:
                assert hit.body == kept  # the stored bytes, signed as sent
            assert body["timestamp"].endswith("Z")
            received.setdefault(path, []).append(body)
    assert Counter(body["type"] for body in received["/ok"]) == expected
    assert sorted(body["type"] for body in received["/target"]) == [
        "otp.code_issued", "sale.committed"]
    data = {body["type"]: body["data"] for body in received["/ok"]}
    assert data["customer.created"]["id"] == customer["id"]
    assert data["customer.created"]["firstName"] == "Иван"
    assert sorted(body["data"]["id"] for body in received["/ok"]
                  if body["type"] == "reward.adjusted") == sorted([adjustment["id"], promo["id"]])
    assert (data["reward.expiring"]["customerId"], data["reward.expiring"]["amount"]) == (
        customer["id"], "10.00")
    assert (data["reward.expired"]["customerId"], data["reward.expired"]["amount"]) == (
        customer["id"], "-10.00")
    assert data["otp.code_issued"]["challengeId"] == challenge["id"]
    assert re.fullmatch(r"[0-9]{6}", data["otp.code_issued"]["code"])
    assert data["catalog.synced"]["id"] == sync["id"]
    assert data["checkout.hold.released"]["state"] == "RELEASED"
    assert data["checkout.hold.expired"]["id"] == expiring["id"]
    assert data["sale.committed"]["id"] == sale["id"]
    assert data["sale.returned"]["id"] == returned["id"]
    assert data["program.updated"] == program
    # Deliveries run concurrently: the two moves arrive in either order.
    moves = [body["data"] for body in received["/ok"] if body["type"] == "customer.tier_changed"]
    assert len(moves) == 2 and {"customerId": customer["id"], "from": "Silver", "to": "Base"} in moves
    # Another endpoint's secret does not verify: each endpoint signs with its own.
    with pytest.raises(WebhookVerificationError):
        verified(sales_secret, hits_at(receiver, "/ok")[0])
    eventually(lambda: {(d.state, d.attempts) for d in deliveries(app)} == {("DELIVERED", 1)}
               and len(deliveries(app)) == sum(expected.values()) + 2,
               "all recorded DELIVERED", [worker])


def test_failures_are_retried_then_dead_lettered_and_replayed(app, client, tenant, receiver,
                                                              workers):
    """A 500 and a 3xx both fail; the redirect is never followed. After the schedule's three
    attempts the deliveries are dead letters; replay sends them again, same webhook-id."""
    allow_loopback(app)
    failing_id, failing_secret = register(client, tenant, receiver.url("/flaky"))
    redirect_id, redirect_secret = register(client, tenant, receiver.url("/redirect"))
    receiver.answer("/flaky", 500)
    worker = workers.running()

    event_id = commit_event(app, tenant.company_id, "reward.adjusted",
                            SAMPLE_DATA["reward.adjusted"])

    eventually(lambda: delivery_in(app, "DEAD", endpoint_id=failing_id)
               and delivery_in(app, "DEAD", endpoint_id=redirect_id),
               "both dead-lettered", [worker])
    for endpoint_id, path, secret, status in ((failing_id, "/flaky", failing_secret, 500),
                                              (redirect_id, "/redirect", redirect_secret, 302)):
        [dead] = deliveries(app, endpoint_id=endpoint_id)
        assert (dead.attempts, dead.last_status) == (ATTEMPTS, status)
        hits = hits_at(receiver, path)
        assert len(hits) == ATTEMPTS
        assert {hit.headers["webhook-id"] for hit in hits} == {event_id}
        assert all(verified(secret, hit)["type"] == "reward.adjusted" for hit in hits)
    assert hits_at(receiver, "/target") == []  # where the redirect pointed

    letters = operator(app, "webhooks", "dead-letters")
    assert letters[-1] == "2 dead deliveries"
    assert sorted(line.split("\t")[4] for line in letters[:-1]) == sorted(
        [receiver.url("/flaky"), receiver.url("/redirect")])
    assert all(line.startswith(event_id + "\t") for line in letters[:-1])

    receiver.answer("/flaky", 200)
    receiver.answer("/redirect", 204)
    assert operator(app, "webhooks", "replay", event_id)[-1] == "replaying 2 deliveries"

    eventually(lambda: delivery_in(app, "DELIVERED", endpoint_id=failing_id)
               and delivery_in(app, "DELIVERED", endpoint_id=redirect_id), "replayed", [worker])
    for path, secret in (("/flaky", failing_secret), ("/redirect", redirect_secret)):
        last = hits_at(receiver, path)[-1]
        assert len(hits_at(receiver, path)) == ATTEMPTS + 1
        assert last.headers["webhook-id"] == event_id
        assert verified(secret, last)["data"] == SAMPLE_DATA["reward.adjusted"]
    assert operator(app, "webhooks", "dead-letters") == ["0 dead deliveries"]


def test_410_disables_the_endpoint(app, client, tenant, receiver, workers):
    allow_loopback(app)
    gone_id, _ = register(client, tenant, receiver.url("/gone"))
    _, ok_secret = register(client, tenant, receiver.url("/ok"))
    worker = workers.running()

    first = commit_event(app, tenant.company_id, "customer.created",
                         SAMPLE_DATA["customer.created"])
    eventually(lambda: delivery_in(app, "DEAD", endpoint_id=gone_id), "410 dead-lettered", [worker])

    [dead] = deliveries(app, endpoint_id=gone_id)
    assert (dead.attempts, dead.last_status) == (1, 410)  # no retries after a 410
    listed = {e["id"]: e for e in client.get("/v1/webhook-endpoints", headers=tenant.headers())
              .get_json()["items"]}
    assert listed[gone_id]["state"] == "DISABLED" and listed[gone_id]["disabledAt"].endswith("Z")

    second = commit_event(app, tenant.company_id, "customer.created",
                          SAMPLE_DATA["customer.created"])
    eventually(lambda: len(hits_at(receiver, "/ok")) == 2, "the later event, to the live endpoint",
               [worker])
    ok_hits = hits_at(receiver, "/ok")
    assert all(verified(ok_secret, hit) for hit in ok_hits)
    assert [hit.headers["webhook-id"] for hit in ok_hits] == [first, second]
    assert len(hits_at(receiver, "/gone")) == 1
    assert len(deliveries(app, endpoint_id=gone_id)) == 1
    # Replay leaves it alone: the receiver said the endpoint is gone.
    assert operator(app, "webhooks", "replay", first)[-2:] == [
        "1 left dead: their endpoint is disabled or deleted", "replaying 0 deliveries"]


def test_worker_killed_mid_delivery_loses_nothing(app, client, tenant, receiver, workers):
    allow_loopback(app)
    _, secret = register(client, tenant, receiver.url("/slow"))  # holds the request open
    worker = workers.running()
    event_id = commit_event(app, tenant.company_id, "sale.committed", SAMPLE_DATA["sale.committed"])
    eventually(lambda: hits_at(receiver, "/slow"), "the request reaches the receiver", [worker])

    worker.kill()
    receiver.server.release.set()  # from now on the receiver answers 200 at once
    [orphan] = deliveries(app)
    assert orphan.state == "PENDING" and orphan.attempts == 1 and orphan.delivered_at is None
    # The attempt's lease would run out by itself; move it into the past instead of waiting.
    run_sql(app, update(WebhookDelivery).values(next_attempt_at=utcnow() - timedelta(minutes=5)))

    restarted = workers.running()
    eventually(lambda: delivery_in(app, "DELIVERED"), "delivered after the restart", [restarted])
    hits = hits_at(receiver, "/slow")
    assert len(hits) == 2
    assert [hit.headers["webhook-id"] for hit in hits] == [event_id, event_id]
    assert all(verified(secret, hit)["data"] == SAMPLE_DATA["sale.committed"] for hit in hits)
    assert deliveries(app)[0].attempts == 2


def test_event_committed_but_never_enqueued_is_swept(app, client, tenant, receiver, workers):
    """A crash (or Redis away) between commit and enqueue: the outbox sweep finds the event."""
    allow_loopback(app)
    _, secret = register(client, tenant, receiver.url("/ok"))
    event_id = commit_event(app, tenant.company_id, "catalog.synced", SAMPLE_DATA["catalog.synced"],
                            enqueue=False)
    run_sql(app, update(OutboxEvent).values(created_at=utcnow() - timedelta(minutes=1)))

    worker = workers.running()
    workers.run_upkeep()  # as the worker's timer does every interval: the sweep runs

    [hit] = eventually(lambda: hits_at(receiver, "/ok"), "the swept event delivered", [worker])
    assert hit.headers["webhook-id"] == event_id
    assert verified(secret, hit)["type"] == "catalog.synced"


def test_a_starting_worker_takes_up_the_work_lost_jobs_left(app, client, tenant, receiver,
                                                             workers):
    """A worker stopped between taking a job and running it loses the job: a lost dispatch run
    leaves its request standing, and a lost delivery job leaves a delivery due. Both are fresh,
    younger than the sweep's ages; the next worker to start takes them up at once."""
    allow_loopback(app)
    register(client, tenant, receiver.url("/ok"))
    workers.stop_all()
    stranded = commit_event(app, tenant.company_id, "catalog.synced",
                            SAMPLE_DATA["catalog.synced"], enqueue=False)
    with app.extensions["session_factory"]() as session:  # dispatched, its delivery job lost
        dispatch_pending(session, now=utcnow(), limit=10)
        session.commit()
    workers.redis.set(dispatch_flag_key(workers.settings), "1", ex=60)  # a lost run's request
    held_back = commit_event(app, tenant.company_id, "reward.adjusted",
                             SAMPLE_DATA["reward.adjusted"])
    assert workers.queue.count == 0

    worker = workers.running()
    hits = eventually(lambda: len(hits_at(receiver, "/ok")) >= 2 and hits_at(receiver, "/ok"),
                      "both delivered by the starting worker", [worker])
    assert sorted(hit.headers["webhook-id"] for hit in hits) == sorted([stranded, held_back])


@pytest.fixture
def event_app(settings, tenant):
    """The app with one more route that records an event and answers the status it is told,
    so the request's own commit (or rollback) and after-commit enqueue are what is tested."""
    app = create_app(settings)

    @app.post("/probe/events/<int:status>")
    def record(status):
        record_event(request_session(), tenant.company_id, "customer.created", request.get_json())
        if status >= 400:
            raise Conflict("the change is refused")
        return {}, status

    yield app
    app.extensions["engine"].dispose()


def test_rolled_back_transaction_sends_nothing(app, client, tenant, receiver, workers, event_app):
    allow_loopback(app)
    _, secret = register(client, tenant, receiver.url("/ok"))
    worker = workers.running()
    probe = event_app.test_client()

    refused = probe.post("/probe/events/409", json={"id": "rolled-back"})
    refused.close()  # the server closes the response; that runs the after-commit hand-off
    committed = probe.post("/probe/events/201", json={"id": "committed"})
    committed.close()
    assert (refused.status_code, committed.status_code) == (409, 201)

    [hit] = eventually(lambda: hits_at(receiver, "/ok"), "the committed event", [worker])
    assert verified(secret, hit)["data"] == {"id": "committed"}
    with app.extensions["session_factory"]() as session:
        payloads = session.scalars(select(OutboxEvent.payload))
        assert [json.loads(payload)["data"]["id"] for payload in payloads] == ["committed"]
    assert len(receiver.hits) == 1


def test_private_address_is_refused_at_delivery_unless_allowed(app, client, tenant, receiver,
                                                               workers):
    """`localhost` is an allowed host, but it resolves to 127.0.0.1: without the setting the
    connection is refused before any request; with it, the replay gets through."""
    operator(app, "webhooks", "allow-host", "localhost")
    _, secret = register(client, tenant, receiver.url("/ok", host="localhost"))
    strict = workers.running(allow_private=False)
    event_id = commit_event(app, tenant.company_id, "customer.created",
                            SAMPLE_DATA["customer.created"])

    dead = eventually(lambda: delivery_in(app, "DEAD"), "refused to the end", [strict])
    assert (dead.attempts, dead.last_status) == (ATTEMPTS, None)
    assert dead.last_error == "address not allowed"
    assert receiver.hits == [] and receiver.server.connections == 0  # not even a handshake

    strict.kill()
    permissive = workers.running(allow_private=True)
    operator(app, "webhooks", "replay", event_id)
    [hit] = eventually(lambda: hits_at(receiver, "/ok"),
                       "delivered once private addresses are allowed", [permissive])
    assert verified(secret, hit)["data"]["id"] == "c-1"
