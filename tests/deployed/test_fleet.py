"""docs/api.md#limits against the fleet of testbed/fleet.py: nginx, two web instances, two
workers, PgBouncer in transaction mode over a database in Asia/Kathmandu. The scenarios share
the fleet and run in this order; what the worker killed in (e) left is checked last."""
from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
import requests

from testbed.fleet import Fleet, missing_fleet_programs
from testbed.registers import CheckoutStream
from tests.conftest import without
from tests.deployed.test_running_as_deployed import (BACK_WITHIN, UNAVAILABLE,
                                                   assert_each_receipt_once)

pytestmark = [pytest.mark.deployed, pytest.mark.slow]

ANSWERED = (200, 201)
NGINX_RETRY_AFTER = 3  # nginx tries a failed instance again after fail_timeout (2 s)
PERIODIC_CUSTOMERS = 5


@pytest.fixture(scope="module")
def fleet():
    missing = missing_fleet_programs()
    if missing:
        without(f"the fleet needs {', '.join(missing)} (.ci/run installs them)")
    built = Fleet()
    try:
        yield built.start()
    finally:
        built.close()


def not_answered(stream: CheckoutStream) -> list:
    return [a for a in stream.tally.answers if a.status not in ANSWERED]


def test_a_a_rolling_restart_behind_nginx_fails_no_request(fleet, figures):
    with CheckoutStream(fleet.registers, f"ROLL-{uuid.uuid4().hex[:6]}") as stream:
        time.sleep(2)
        for index in range(len(fleet.webs)):
            fleet.restart_instance(index, signal.SIGTERM)  # SIGTERM, wait, start
            time.sleep(NGINX_RETRY_AFTER)
    figures(**stream.tally.figures())
    assert not_answered(stream) == []
    assert_each_receipt_once(fleet, stream)


def test_a_b_bodies_answered_before_they_are_read_fail_no_other_request(fleet, figures):
    """Two clients send bodies of 200 KB with a key that is no key while the registers check
    out: each is answered 401 before its body is read, no register's request gets nginx's 502,
    and nginx sent none on a connection an instance was closing after such an answer (its
    log would tell: the request is then sent once more, as keyed ones are)."""
    refused, stop = [], threading.Event()
    logged = len(fleet.nginx.errors().splitlines())

    def send_junk() -> None:
        while not stop.is_set():
            refused.append(requests.post(
                f"{fleet.nginx.url}/v1/customers", data=b"{" + b" " * 200_000 + b"}",
                headers={"Authorization": "Bearer junk", "Content-Type": "application/json"},
                timeout=30).status_code)

    senders = [threading.Thread(target=send_junk, daemon=True) for _ in range(2)]
    with CheckoutStream(fleet.registers, f"EARLY-{uuid.uuid4().hex[:6]}") as stream:
        for sender in senders:
            sender.start()
        time.sleep(20)
        stop.set()
        for sender in senders:
            sender.join(60)
    figures(**stream.tally.figures(), refused=dict(Counter(refused)))
    assert refused and set(refused) == {401}
    assert not_answered(stream) == []
    assert [line for line in fleet.nginx.errors().splitlines()[logged:] if "upstream" in line] == []


def test_b_a_killed_instance_fails_at_most_what_was_in_flight_on_it(fleet, figures):
    with CheckoutStream(fleet.registers, f"KILL-{uuid.uuid4().hex[:6]}") as stream:
        time.sleep(2)
        fleet.webs[0].signal(signal.SIGKILL)
        assert fleet.webs[0].wait(30) is not None
        while _group_alive(fleet.webs[0].process.pid):  # its workers die a moment later
            time.sleep(0.01)
        dead_at = time.monotonic()  # the dying processes still took connections until here
        time.sleep(2)
        fleet.webs[0] = fleet.start_instance(0)
        time.sleep(NGINX_RETRY_AFTER)
    failed = not_answered(stream)
    figures(**stream.tally.figures(), failed=len(failed))
    # A register has one request out at a time: at most one each was on the instance, and
    # none sent once it was gone failed.
    assert len(failed) <= len(fleet.registers)
    assert all(answer.started <= dead_at for answer in failed), failed
    sales = fleet.sales_of(stream.prefix)
    assert stream.tally.committed.items() <= sales.items()
    # A commit in flight may have been made without its register hearing of it.
    assert len(sales) - len(stream.tally.committed) <= len(failed)
    assert fleet.flask("ledger", "verify").startswith("0 differences")


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False


def test_c_the_proxys_own_errors_answer_in_the_apps_shape(fleet):
    too_large = requests.post(f"{fleet.nginx.url}/v1/customers", data=b"{" * (16 * 1024 * 1024 + 1),
                              headers=fleet.api.headers(**{"Content-Type": "application/json"}),
                              timeout=60)
    assert too_large.status_code == 413
    assert too_large.json()["code"] == "payload_too_large"
    assert too_large.headers["X-Request-Id"]
    # What nginx itself refuses to read: a malformed request line, one too long, a header line
    # too long (nginx's 494, answered 431).
    for sent, status, code in (
            (b"GET /v1/\x01company HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request"),
            (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
            (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Note: " + b"a" * 9000 + b"\r\n\r\n",
             431, "request_header_too_large")):
        head, _, body = _raw(fleet.nginx.port, sent).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 %d " % status), head
        assert b"\r\nContent-Type: application/json\r\n" in head and b"\r\nX-Request-Id: " in head
        assert json.loads(body) == {"detail": json.loads(body)["detail"], "code": code}
    for web in fleet.webs:
        web.signal(signal.SIGTERM)
        assert web.wait(60) is not None
    try:
        down = requests.get(f"{fleet.nginx.url}/v1/company", headers=fleet.api.headers(),
                            timeout=30)
        assert down.status_code == 502
        assert down.headers["Content-Type"] == "application/json"
        assert down.json() == {"detail": down.json()["detail"], "code": "bad_gateway"}
        assert down.headers["Retry-After"] == "1" and down.headers["X-Request-Id"]
    finally:
        fleet.webs = [fleet.start_instance(index) for index in range(len(fleet.webs))]
        time.sleep(NGINX_RETRY_AFTER)


def _raw(port: int, sent: bytes) -> bytes:
    """What nginx answers to `sent` as is, up to its closing the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(sent)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_d_two_workers_deliver_once_and_run_each_periodic_task_once(fleet, figures):
    api = fleet.api
    api.http.patch(f"{api.base_url}/v1/program", json={"birthdayBonus": "100.00",
                                                      "expiryReminderDays": 1},
                   headers=api.headers()).raise_for_status()
    tomorrow = datetime.now(ZoneInfo("Europe/Moscow")).date() + timedelta(days=1)
    customers = [api.post("/v1/customers", {
        "phone": f"+7913{uuid.uuid4().int % 10**7:07d}", "firstName": "Olga",
        "birthDate": tomorrow.replace(year=1990).isoformat()})["id"]
        for _ in range(PERIODIC_CUSTOMERS)]
    # A day passes for their accounts: the birthday is due now, and nothing touches them again,
    # so only the periodic job can credit the bonus, as only it can expire the points below.
    fleet.execute("UPDATE reward_accounts SET birthday_due_on = birthday_due_on - 1"
                  " WHERE company_id = %s AND customer_id = ANY(%s)", fleet.company_id, customers)
    expires = (datetime.now(timezone.utc) + timedelta(seconds=6)).isoformat().replace("+00:00", "Z")
    for customer in customers:
        api.post(f"/v1/customers/{customer}/reward-adjustments",
                 {"amount": "50.00", "basis": "promo", "expiresAt": expires},
                 **{"Idempotency-Key": uuid.uuid4().hex})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
            len(_entries(fleet, customers, "BONUS")) < PERIODIC_CUSTOMERS
            or len(_entries(fleet, customers, "EXPIRY")) < PERIODIC_CUSTOMERS):
        time.sleep(1)
    time.sleep(3 * 2)  # more rounds of both workers' upkeep, to catch a second run
    bonuses, expiries = _entries(fleet, customers, "BONUS"), _entries(fleet, customers, "EXPIRY")
    reminders = _events(fleet, customers, "reward.expiring")
    expired = _events(fleet, customers, "reward.expired")
    figures(bonuses=len(bonuses), expiries=len(expiries), reminders=len(reminders))
    assert Counter(bonuses) == Counter({customer: 1 for customer in customers})
    assert Counter(expiries) == Counter({customer: 1 for customer in customers})
    assert Counter(reminders) == Counter({customer: 1 for customer in customers})
    assert Counter(expired) == Counter({customer: 1 for customer in customers})

    events = set(fleet.recorded_events())
    missing = fleet.receiver.wait_for(events, 60)
    assert not missing, f"{len(missing)} of {len(events)} events not delivered"
    answered = Counter(received.event_id for received in fleet.receiver.received())
    repeated = {event: n for event, n in answered.items() if n > 1}
    figures(events=len(events), delivered_twice=len(repeated))
    assert repeated == {}


def _entries(fleet, customers: list[str], kind: str) -> list[str]:
    return [row[0] for row in fleet.query(
        "SELECT customer_id FROM ledger_entries WHERE company_id = %s AND type = %s"
        " AND customer_id = ANY(%s)", fleet.company_id, kind, customers)]


def _events(fleet, customers: list[str], kind: str) -> list[str]:
    return [row[0] for row in fleet.query(
        "SELECT payload::json #>> '{data,customerId}' FROM outbox_events"
        " WHERE company_id = %s AND type = %s", fleet.company_id, kind)
        if row[0] in customers]


def test_e_a_worker_killed_mid_run_loses_nothing(fleet, figures):
    with CheckoutStream(fleet.registers, f"WORK-{uuid.uuid4().hex[:6]}") as stream:
        time.sleep(3)
        fleet.workers[0].signal(signal.SIGKILL)
        assert fleet.workers[0].wait(30) is not None
        time.sleep(3)
    assert_each_receipt_once(fleet, stream)
    fleet.workers[0] = fleet._line("worker", name="worker-0")
    events = set(fleet.recorded_events())
    started = time.monotonic()
    # A delivery the killed worker had claimed is due again 60 s later, and the sweep finds it.
    missing = fleet.receiver.wait_for(events, 180)
    figures(events=len(events), all_delivered_after_s=round(time.monotonic() - started, 1))
    assert not missing, f"{len(missing)} of {len(events)} events never delivered"


def test_f_postgres_restarted_behind_pgbouncer(fleet, figures):
    # docs/api.md#availability through PgBouncer: its server connections die with PostgreSQL while
    # the app's connections to PgBouncer live on, so no pre-ping of the app's pool sees the restart.
    # A request meanwhile is answered 503 database_unavailable at worst, and once PostgreSQL is
    # back the registers are served again within the same 5 s as without PgBouncer.
    with CheckoutStream(fleet.registers, f"PG-{uuid.uuid4().hex[:6]}") as stream:
        time.sleep(2)
        stopping = time.monotonic()
        fleet.postgres.restart("fast")
        back = time.monotonic()
        time.sleep(BACK_WITHIN + 3)
    recovery = stream.tally.recovery_after(back)
    figures(**stream.tally.figures(), restart_s=round(back - stopping, 2), **recovery)
    assert set(stream.tally.by_status()) <= {"200", "201", UNAVAILABLE}
    assert recovery["first success s"] is not None
    assert max(recovery["first success s"], recovery["last failure s"]) <= BACK_WITHIN
    assert_each_receipt_once(fleet, stream)
    assert all(worker.running() for worker in fleet.workers), "a worker died with PostgreSQL"
