"""docs/api.md#availability against the Procfile's processes, with their PostgreSQL and Redis killed
and restarted under them (issue 11, item 3). The scenarios share one deployment and run in this
order; the delivery cut short in (e) is checked after (b)–(d), once the outbox sweep has had
time to find it."""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import pytest
import requests

from testbed.procfile import children
from testbed.registers import BROKEN, CheckoutStream, Tally

pytestmark = [pytest.mark.deployed, pytest.mark.slow]

IDLE_SECONDS = 30
REDIS_DOWN_SECONDS = 40
BACK_WITHIN = 5  # seconds after PostgreSQL's return (docs/api.md#availability)
WEB_GRACE, WORKER_GRACE = 30, 60
ANSWERED = {"200", "201"}
UNAVAILABLE = "503 database_unavailable, Retry-After 1"


def new_event(deployment) -> str:
    """A reward adjustment through the API; the id of the event it recorded."""
    before = deployment.recorded_events()
    deployment.api.post(f"/v1/customers/{deployment.spare.customer_id}/reward-adjustments",
                        {"amount": "1.00", "basis": "goodwill"},
                        **{"Idempotency-Key": uuid.uuid4().hex})
    (event_id,) = set(deployment.recorded_events()) - set(before)
    return event_id


def delivered_within(deployment, ids: set[str], seconds: float) -> float:
    started = time.monotonic()
    missing = deployment.receiver.wait_for(ids, seconds)
    assert not missing, f"{len(missing)} of {len(ids)} events not delivered in {seconds} s"
    return round(time.monotonic() - started, 2)


def hold_expiry_received(deployment, hold_id: str, timeout: float) -> float | None:
    """When the receiver got `checkout.hold.expired` for the hold (time.time()), or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in deployment.receiver.of_type("checkout.hold.expired"):
            if event.data["id"] == hold_id:
                return event.at
        time.sleep(0.2)
    return None


def assert_each_receipt_once(deployment, stream: CheckoutStream) -> None:
    """Every receipt the registers saw committed is one sale, the one they were told of;
    nothing else was committed; no sale's ledger entry was written twice; the ledger adds up."""
    tally = stream.tally
    assert not tally.failures, tally.failures[:5]
    assert tally.committed, "no checkout completed"
    assert deployment.sales_of(stream.prefix) == tally.committed
    assert deployment.entries_repeated(list(tally.committed.values())) == []
    assert deployment.flask("ledger", "verify").startswith("0 differences")


def test_a_idle_worker_delivers_and_runs_its_upkeep(deployment, figures):
    # Upkeep less often than the idle spell: for 30 s the worker has no job at all.
    deployment.worker.stop()
    deployment.start_worker(UPKEEP_INTERVAL_SECONDS=str(IDLE_SECONDS + 10))
    hold_id = deployment.spare.place_hold(f"A-{uuid.uuid4().hex[:8]}", Tally())
    hold_expires = time.time() + 30  # the program's hold TTL
    delivered_within(deployment, set(deployment.recorded_events()), 30)

    time.sleep(IDLE_SECONDS)
    if not deployment.worker.running():
        figures(idle_s=IDLE_SECONDS, worker_exit=deployment.worker.process.returncode)
        pytest.fail(f"the worker exited while idle for {IDLE_SECONDS} s")
    event_id, sent = new_event(deployment), time.monotonic()
    missing = deployment.receiver.wait_for({event_id}, 30)
    delivery_s = round(time.monotonic() - sent, 2)
    expired_at = hold_expiry_received(deployment, hold_id, 60)
    figures(idle_s=IDLE_SECONDS, delivered_after_idle_s=None if missing else delivery_s,
            hold_expired_event_after_expiry_s=expired_at and round(expired_at - hold_expires, 1))
    assert not missing, "the event after the idle spell was not delivered"
    assert expired_at, "the periodic upkeep did not expire the hold"


def test_e_worker_killed_mid_delivery(deployment, figures):
    deployment.ensure_running()
    arrived = deployment.receiver.hold_answers()
    try:
        new_event(deployment)
        assert arrived.wait(30), "no delivery reached the receiver"
        cut_short = deployment.receiver.last_arrival()
        deployment.worker.signal(signal.SIGKILL)
        killed_at = time.time()
        assert deployment.worker.wait(10) is not None
    finally:
        deployment.receiver.answer_again()
    deployment.start_worker()
    restarted_at = time.time()
    delivery_s = delivered_within(deployment, {new_event(deployment)}, 30)
    deployment.notes["cut short"] = (cut_short, killed_at, restarted_at)
    figures(restart_s=round(restarted_at - killed_at, 1), next_event_delivered_s=delivery_s)


def test_b_redis_killed_for_40_s(deployment, figures):
    deployment.ensure_running()
    before = set(deployment.recorded_events())
    # Fewer checkouts than elsewhere: the events recorded meanwhile wait for one worker.
    with CheckoutStream(deployment.registers, "B", pause=0.5) as stream:
        time.sleep(2)
        # Expires while Redis is away: only the upkeep after its return can expire it.
        hold_id = deployment.spare.place_hold(f"B-hold-{uuid.uuid4().hex[:8]}", Tally())
        deployment.redis.kill()
        time.sleep(REDIS_DOWN_SECONDS)
        deployment.redis.start()
        back = time.time()
        time.sleep(3)
    meanwhile = set(deployment.recorded_events()) - before
    missing = deployment.receiver.wait_for(meanwhile, 90)
    delivered_s = round(time.time() - back, 1)
    expired_at = hold_expiry_received(deployment, hold_id, 60)
    figures(**stream.tally.figures(), redis_down_s=REDIS_DOWN_SECONDS,
            events_meanwhile=len(meanwhile), undelivered=len(missing),
            all_delivered_after_return_s=None if missing else delivered_s,
            hold_expired_event_after_return_s=expired_at and round(expired_at - back, 1))
    assert not stream.tally.failures, stream.tally.failures[:5]
    assert set(stream.tally.by_status()) <= ANSWERED, "a checkout depended on Redis"
    assert not missing, f"{len(missing)} events recorded while Redis was away never delivered"
    assert expired_at, "no upkeep ran after Redis came back"
    assert deployment.worker.running(), "the worker did not survive Redis's restart"


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_c_postgres_restarted(deployment, figures, mode):
    deployment.ensure_running()
    with CheckoutStream(deployment.registers, f"C-{mode}") as stream:
        time.sleep(2)
        stopping = time.monotonic()
        deployment.postgres.restart(mode)
        back = time.monotonic()
        time.sleep(BACK_WITHIN + 1)
    recovery = stream.tally.recovery_after(back)
    figures(mode=mode, **stream.tally.figures(), restart_s=round(back - stopping, 2), **recovery)
    assert set(stream.tally.by_status()) <= ANSWERED | {UNAVAILABLE}
    assert recovery["first success s"] is not None
    assert max(recovery["first success s"], recovery["last failure s"]) <= BACK_WITHIN
    assert_each_receipt_once(deployment, stream)
    assert deployment.worker.running(), "the worker did not survive PostgreSQL's restart"


def test_d_gunicorn_worker_killed_mid_stream(deployment, figures):
    deployment.ensure_running()
    web_workers = int(deployment.settings["WEB_CONCURRENCY"])
    with CheckoutStream(deployment.registers, "D") as stream:
        time.sleep(2)
        # Requests held in flight (waiting on the locked accounts): the kill cuts short those
        # of a process that holds one (its threads serve several at a time).
        with deployment.accounts_locked([r.customer_id for r in deployment.registers]):
            deployment.wait_for_lock_waiters(web_workers)
            holding = deployment.web_processes_waiting_on_locks(children(deployment.web.pid))
            assert holding, "no web process holds a waiting request"
            os.kill(holding[0], signal.SIGKILL)
            killed = time.monotonic()
            time.sleep(0.5)
        time.sleep(4)
    workers = children(deployment.web.pid)
    figures(**stream.tally.figures(), **stream.tally.recovery_after(killed))
    assert BROKEN in stream.tally.by_status(), "no kill met a request in flight"
    assert set(stream.tally.by_status()) <= ANSWERED | {BROKEN, UNAVAILABLE}
    assert_each_receipt_once(deployment, stream)
    assert len(workers) == web_workers, "gunicorn did not replace its killed worker"


def test_e_delivery_cut_short_is_made_again(deployment, figures):
    """(e), continued: every event, the one whose delivery was cut short included, reached
    the receiver at least once."""
    cut_short, killed_at, restarted_at = deployment.notes["cut short"]
    deadline = time.monotonic() + max(30.0, killed_at + 240 - time.time())
    while not any(r.event_id == cut_short and r.at > restarted_at
                  for r in deployment.receiver.received()) and time.monotonic() < deadline:
        time.sleep(0.5)
    again = [r.at for r in deployment.receiver.received()
             if r.event_id == cut_short and r.at > restarted_at]
    recorded = set(deployment.recorded_events())
    missing = deployment.receiver.wait_for(recorded, 90)
    figures(delivered_again_after_kill_s=again and round(min(again) - killed_at, 1),
            events=len(recorded), undelivered=len(missing))
    assert again, "the delivery cut short by the kill was never made again"
    assert not missing, f"{len(missing)} recorded events never delivered"


def test_f_sigterm_finishes_work_in_flight(deployment, figures):
    deployment.ensure_running()
    register = deployment.spare
    arrived = deployment.receiver.hold_answers()
    new_event(deployment)
    assert arrived.wait(30), "no delivery reached the receiver"
    event_id = deployment.receiver.last_arrival()
    # A hold that waits on its customer's account, locked below: a request in flight.
    base, quote = register.quoted(f"F-{uuid.uuid4().hex[:8]}", Tally())
    answer: dict = {}

    def hold():
        headers = register.api.headers(**{"Idempotency-Key": uuid.uuid4().hex,
                                          "X-Loyalty-Pos-Key": register.pos_key})
        try:
            answer["status"] = requests.post(f"{register.api.base_url}{base}/hold",
                                             json={"quoteId": quote["id"]}, headers=headers,
                                             timeout=60).status_code
        except requests.RequestException as error:
            answer["status"] = repr(error)

    in_flight = threading.Thread(target=hold)
    try:
        with deployment.accounts_locked([register.customer_id]):
            in_flight.start()
            deployment.wait_for_lock_waiters(1)
            deployment.web.signal(signal.SIGTERM)
            deployment.worker.signal(signal.SIGTERM)
            stopped = time.monotonic()
            time.sleep(2)
    finally:
        deployment.receiver.answer_again()
    in_flight.join(WEB_GRACE + 10)
    web_exit = deployment.web.wait(max(0.1, stopped + WEB_GRACE - time.monotonic()))
    web_s = round(time.monotonic() - stopped, 1)
    worker_exit = deployment.worker.wait(max(0.1, stopped + WORKER_GRACE - time.monotonic()))
    worker_s = round(time.monotonic() - stopped, 1)
    delivered = deployment.query("SELECT count(*) FROM webhook_deliveries WHERE event_id = %s"
                                 " AND state = 'DELIVERED'", event_id)[0][0]
    figures(hold_in_flight=answer.get("status"), web_exit=web_exit, web_exit_s=web_s,
            worker_exit=worker_exit, worker_exit_s=worker_s, delivery_in_flight_done=delivered)
    assert answer.get("status") == 201, "the request in flight did not complete"
    assert web_exit == 0, f"web did not exit 0 within {WEB_GRACE} s of SIGTERM"
    assert worker_exit == 0, f"the worker did not exit 0 within {WORKER_GRACE} s of SIGTERM"
    assert delivered == 1, "the worker did not finish the delivery in flight"
