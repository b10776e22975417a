"""The delivery rules on the database alone (both databases, no worker): dispatch, the
attempt lease, outcomes and the retry timetable, dead letters, replay, what the sweep picks."""
from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import AuditEvent, OutboxEvent, WebhookDelivery, WebhookEndpoint
from app.services.webhooks import delivery, endpoints, history
from app.services.webhooks.outbox import record_event
from app.services.webhooks.transport import DeliveryOutcome
from tests.conftest import TEST_PEPPER

DELAYS = [1.0, 1.0]


def ok(status=200):
    return DeliveryOutcome(status=status, retry_after=None, error=None)


@pytest.fixture
def session(app):
    session = app.extensions["session_factory"]()
    endpoints.allow_host(session, "hooks.example.com", now=utcnow())
    session.commit()
    yield session
    session.rollback()
    session.close()


def endpoint(session, company_id, events=("*",), path="/hook"):
    created, secret = endpoints.create_endpoint(
        session, company_id, url=f"https://hooks.example.com{path}", events=list(events),
        description=None, pepper=TEST_PEPPER, now=utcnow())
    session.commit()
    return created


def event(session, company_id, event_type="customer.created", data=None):
    recorded = record_event(session, company_id, event_type, data or {"id": "c-1"})
    session.commit()
    return recorded


def dispatch(session, limit=100):
    """One dispatch run's batch: the deliveries it made."""
    _, made = delivery.dispatch_pending(session, now=utcnow(), limit=limit)
    session.commit()
    return made


def disable(session, endpoint_row):
    session.execute(update(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_row.id)
                    .values(state="DISABLED"))


def stored_delivery(session, delivery_id):
    session.expire_all()
    return session.scalar(select(WebhookDelivery).where(WebhookDelivery.id == delivery_id))


def claim(session, company_id, delivery_id, now=None):
    attempt = delivery.begin_attempt(session, company_id, delivery_id, now=now or utcnow(),
                                     pepper=TEST_PEPPER)
    session.commit()
    return attempt


def finish(session, attempt, outcome, rand=None):
    delay = delivery.finish_attempt(session, attempt, outcome, now=utcnow(),
                                    delays=DELAYS, rand=rand)
    session.commit()
    return delay


# --- dispatch -------------------------------------------------------------------------------

def test_one_delivery_per_matching_active_endpoint_once(session, tenant, other_tenant):
    everything = endpoint(session, tenant.company_id)
    sales = endpoint(session, tenant.company_id, ["sale.committed"])
    disabled = endpoint(session, tenant.company_id)
    deleted = endpoint(session, tenant.company_id)
    endpoint(session, other_tenant.company_id)
    disable(session, disabled)
    endpoints.delete_endpoint(session, tenant.company_id, deleted.id, now=utcnow())
    session.commit()
    created = event(session, tenant.company_id)
    sold = event(session, tenant.company_id, "sale.committed")

    made = dispatch(session)

    rows = session.scalars(select(WebhookDelivery)).all()
    assert len(made) == len(rows) == 3
    assert sorted((r.event_id, r.endpoint_id) for r in rows) == sorted(
        [(created.id, everything.id), (sold.id, everything.id), (sold.id, sales.id)])
    assert {r.state for r in rows} == {"PENDING"} and {r.attempts for r in rows} == {0}
    assert all(e.dispatched_at is not None for e in session.scalars(select(OutboxEvent)))
    # Another run finds nothing left to dispatch.
    assert dispatch(session) == []
    assert len(session.scalars(select(WebhookDelivery)).all()) == 3


def test_event_without_endpoints_is_dispatched_with_nothing_to_send(session, tenant):
    recorded = event(session, tenant.company_id)

    assert dispatch(session) == []
    assert session.scalar(select(OutboxEvent.dispatched_at)
                          .where(OutboxEvent.id == recorded.id)) is not None
    assert not delivery.has_stray_events(session, older_than=utcnow())


def test_a_run_takes_the_oldest_events_first_and_no_more_than_its_batch(session, tenant):
    endpoint(session, tenant.company_id)
    recorded = [event(session, tenant.company_id) for _ in range(5)]

    taken, made = delivery.dispatch_pending(session, now=utcnow(), limit=3)
    session.commit()

    assert taken == 3
    first_three = {e.id for e in recorded[:3]}
    assert {r.event_id for r in session.scalars(select(WebhookDelivery))} == first_three
    assert len(made) == 3
    assert len(dispatch(session)) == 2


@pytest.mark.postgres
def test_concurrent_dispatch_of_the_same_events_creates_each_delivery_once(app, session, tenant):
    endpoint(session, tenant.company_id)
    for _ in range(50):
        event(session, tenant.company_id)
    barrier = threading.Barrier(4)
    made = []

    def dispatcher():
        own = app.extensions["session_factory"]()
        barrier.wait()
        while True:  # runs in parallel, each taking small batches until none is left
            taken, deliveries = delivery.dispatch_pending(own, now=utcnow(), limit=5)
            own.commit()
            made.extend(deliveries)
            if not taken:
                break
        own.close()

    threads = [threading.Thread(target=dispatcher) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(made) == 50
    assert len(session.scalars(select(WebhookDelivery)).all()) == 50


# --- one attempt --------------------------------------------------------------------------------

def test_attempt_is_leased_and_signs_the_stored_bytes(session, tenant):
    target = endpoint(session, tenant.company_id)
    recorded = event(session, tenant.company_id, data={"firstName": "Иван"})
    [(company_id, delivery_id)] = dispatch(session)

    attempt = claim(session, company_id, delivery_id)

    assert attempt.number == 1 and attempt.refusal is None
    assert attempt.url == target.url and attempt.event_id == recorded.id
    assert attempt.body == recorded.payload.encode("utf-8") and "Иван".encode() in attempt.body
    headers = delivery.attempt_headers(attempt, 1_700_000_000)
    assert headers["webhook-id"] == recorded.id and headers["webhook-signature"].startswith("v1,")
    # While the lease runs, a duplicate job (or the sweep) gets nothing.
    assert claim(session, company_id, delivery_id) is None
    assert delivery.overdue_deliveries(session, due_before=utcnow(), limit=10) == []
    # A lease that has run out (the worker died) is taken over: the next attempt.
    later = claim(session, company_id, delivery_id, now=utcnow() + delivery.ATTEMPT_LEASE)
    assert later.number == 2
    # The first attempt's outcome no longer changes anything.
    assert finish(session, attempt, ok()) is None
    assert stored_delivery(session, delivery_id).state == "PENDING"
    finish(session, later, ok(204))
    row = stored_delivery(session, delivery_id)
    assert (row.state, row.last_status) == ("DELIVERED", 204)


def test_failures_follow_the_schedule_then_die(session, tenant):
    endpoint(session, tenant.company_id)
    event(session, tenant.company_id)
    [(company_id, delivery_id)] = dispatch(session)
    rand = random.Random(3)

    waits = []
    for _ in range(len(DELAYS) + 1):
        attempt = claim(session, company_id, delivery_id, now=utcnow() + timedelta(minutes=5))
        waits.append(finish(session, attempt, ok(500), rand))
        row = stored_delivery(session, delivery_id)

    assert [w is not None and 0.9 <= w <= 1.1 for w in waits] == [True, True, False]
    assert (row.state, row.attempts, row.last_status) == ("DEAD", 3, 500)
    assert row.last_error == "HTTP 500"
    assert row.next_attempt_at is None


def test_retry_after_is_honoured_up_to_a_day(session, tenant):
    endpoint(session, tenant.company_id)
    event(session, tenant.company_id)
    [(company_id, delivery_id)] = dispatch(session)

    busy = DeliveryOutcome(status=429, retry_after=120.0, error=None)
    assert finish(session, claim(session, company_id, delivery_id), busy) == 120.0
    assert stored_delivery(session, delivery_id).state == "RETRYING"
    forever = DeliveryOutcome(status=503, retry_after=10.0 ** 9, error=None)
    attempt = claim(session, company_id, delivery_id, now=utcnow() + timedelta(minutes=3))
    assert finish(session, attempt, forever) == delivery.RETRY_AFTER_CAP
    # The schedule still ends it: Retry-After never adds attempts.
    last = claim(session, company_id, delivery_id, now=utcnow() + timedelta(days=2))
    assert finish(session, last, busy) is None
    assert stored_delivery(session, delivery_id).state == "DEAD"


def test_gone_disables_the_endpoint_and_its_other_deliveries_die_unsent(session, tenant):
    target = endpoint(session, tenant.company_id)
    event(session, tenant.company_id)
    event(session, tenant.company_id)
    (c1, d1), (c2, d2) = dispatch(session)

    assert finish(session, claim(session, c1, d1), ok(410)) is None

    session.expire_all()
    assert session.get(WebhookEndpoint, (tenant.company_id, target.id)).state == "DISABLED"
    assert (stored_delivery(session, d1).state, stored_delivery(session, d1).attempts) == ("DEAD", 1)
    assert claim(session, c2, d2) is None
    row = stored_delivery(session, d2)
    assert (row.state, row.attempts) == ("DEAD", 0)
    assert row.last_error == "endpoint disabled, nothing sent"


def test_disallowed_host_is_refused_without_a_request(session, tenant):
    endpoint(session, tenant.company_id)
    event(session, tenant.company_id)
    [(company_id, delivery_id)] = dispatch(session)
    assert endpoints.disallow_host(session, "HOOKS.example.com.")
    session.commit()

    attempt = claim(session, company_id, delivery_id)

    assert attempt.refusal == "host no longer allowed"


def test_unreadable_secret_is_refused(session, tenant):
    target = endpoint(session, tenant.company_id)
    event(session, tenant.company_id)
    [(company_id, delivery_id)] = dispatch(session)
    session.execute(update(WebhookEndpoint).where(WebhookEndpoint.id == target.id)
                    .values(secret_encrypted=endpoints.encrypt_secret("old-pepper", "whsec_AAAA")))
    session.commit()

    refusal = claim(session, company_id, delivery_id).refusal
    assert refusal == "the endpoint secret cannot be decrypted"


# --- dead letters and replay ----------------------------------------------------------------

def test_replay_revives_dead_deliveries_to_live_endpoints(session, tenant):
    live = endpoint(session, tenant.company_id, path="/live")
    gone = endpoint(session, tenant.company_id, path="/gone")
    recorded = event(session, tenant.company_id)
    assert len(dispatch(session)) == 2
    rows = {r.endpoint_id: r for r in session.scalars(select(WebhookDelivery))}
    session.execute(update(WebhookDelivery).values(state="DEAD", attempts=3, last_status=500))
    disable(session, gone)
    session.commit()

    letters = history.dead_letters(session)
    assert sorted(letter.url for letter in letters) == sorted([live.url, gone.url])
    assert {letter.event_id for letter in letters} == {recorded.id}
    assert history.dead_letters(session, company_id="another-company") == []

    revived, skipped = history.replay_event(session, recorded.id, now=utcnow())
    session.commit()

    assert revived == [(tenant.company_id, rows[live.id].id)] and skipped == 1
    row = stored_delivery(session, rows[live.id].id)
    assert (row.state, row.attempts, row.last_status) == ("PENDING", 0, None)
    assert stored_delivery(session, rows[gone.id].id).state == "DEAD"
    assert claim(session, tenant.company_id, rows[live.id].id).number == 1


def test_replay_of_an_event_without_dead_deliveries_is_not_found(session, tenant):
    from app.services.errors import NotFound

    with pytest.raises(NotFound):
        history.replay_event(session, "no-such-event", now=utcnow())


def test_a_companys_replay_sends_only_its_own_and_is_recorded(session, tenant, other_tenant):
    from app.services.audit import events as audit
    from app.services.errors import NotFound

    endpoint(session, tenant.company_id)
    ours = event(session, tenant.company_id)
    [(_, delivery_id)] = dispatch(session)
    session.execute(update(WebhookDelivery).values(state="DEAD", attempts=3, last_status=500))
    session.commit()

    with pytest.raises(NotFound):  # another company's event, as an unknown one
        history.replay_event(session, ours.id, company_id=other_tenant.company_id, now=utcnow())
    assert stored_delivery(session, delivery_id).state == "DEAD"
    member = audit.Actor(audit.STAFF, "staff-1", "Olga Owner")
    revived, skipped = history.replay_event(session, ours.id, company_id=tenant.company_id,
                                            now=utcnow(), actor=member)
    session.commit()
    assert (revived, skipped) == ([(tenant.company_id, delivery_id)], 0)
    assert stored_delivery(session, delivery_id).state == "PENDING"
    recorded, _ = audit.events(session, tenant.company_id, offset=0, limit=10)
    assert [(e.action, e.target_type, e.target_id, e.actor_name) for e in recorded] == [
        ("webhook_event.replayed", "webhook_event", ours.id, "Olga Owner")]


def test_the_latest_deliveries_are_the_companys_newest_first(session, tenant, other_tenant):
    endpoint(session, tenant.company_id)
    endpoint(session, other_tenant.company_id)
    first = event(session, tenant.company_id)
    dispatch(session)
    second = event(session, tenant.company_id, "sale.returned")
    event(session, other_tenant.company_id)
    dispatch(session)

    lines = history.latest_deliveries(session, tenant.company_id)
    assert [(line.event_id, line.event_type, line.state) for line in lines] == [
        (second.id, "sale.returned", "PENDING"), (first.id, "customer.created", "PENDING")]
    assert [line.event_id for line in history.latest_deliveries(
        session, tenant.company_id, limit=1)] == [second.id]


# --- what the sweep picks up --------------------------------------------------------------------

def test_sweep_picks_only_stray_events_and_overdue_deliveries(session, tenant):
    endpoint(session, tenant.company_id)
    event(session, tenant.company_id)
    cutoff = utcnow() - timedelta(seconds=10)
    assert not delivery.has_stray_events(session, older_than=cutoff)
    session.execute(update(OutboxEvent).values(created_at=utcnow() - timedelta(minutes=1)))
    session.commit()
    assert delivery.has_stray_events(session, older_than=cutoff)

    [(company_id, delivery_id)] = dispatch(session)
    a_minute_ago = utcnow() - timedelta(seconds=60)
    assert delivery.overdue_deliveries(session, due_before=a_minute_ago, limit=10) == []
    claim(session, company_id, delivery_id)  # then the worker dies: the lease runs out
    session.execute(update(WebhookDelivery).values(next_attempt_at=utcnow() - timedelta(minutes=5)))
    session.commit()
    assert delivery.overdue_deliveries(session, due_before=a_minute_ago,
                                       limit=10) == [(company_id, delivery_id)]


def test_sweep_task_without_redis_enqueues_nothing(app, session, tenant):
    from worker.jobs import sweep_outbox

    if app.config["SETTINGS"].redis_url:
        pytest.skip("this run has Redis")
    event(session, tenant.company_id)
    with app.app_context():
        assert sweep_outbox(session, utcnow() + timedelta(minutes=5)) == 0


# --- hosts --------------------------------------------------------------------------------------

@pytest.mark.parametrize("given, stored", [
    ("Hooks.Example.COM.", "hooks.example.com"),
    ("[::1]", "::1"),
    ("127.0.0.1", "127.0.0.1"),
    ("пример.рф", "xn--e1afmkfd.xn--p1ai"),
])
def test_hosts_are_normalised(given, stored):
    assert endpoints.normalise_host(given) == stored


@pytest.mark.parametrize("given", ["https://hooks.example.com", "hooks.example.com:443",
                                   "hooks.example.com/path", "", "-bad.example.com", "a..b"])
def test_not_a_host(given):
    with pytest.raises(ValueError):
        endpoints.normalise_host(given)


def test_operator_host_commands(app):
    runner = app.test_cli_runner()

    def lines(*args):
        return runner.invoke(args=["webhooks", *args]).output.splitlines()

    assert lines("allow-host", "Hooks.Example.com") == ["hooks.example.com"]
    runner.invoke(args=["webhooks", "allow-host", "b.example.com"])
    runner.invoke(args=["webhooks", "allow-host", "hooks.example.com"])  # twice is once
    assert runner.invoke(args=["webhooks", "hosts"]).output.splitlines() == [
        "b.example.com", "hooks.example.com", "2 hosts"]
    assert lines("disallow-host", "B.example.com") == ["disallowed b.example.com"]
    assert runner.invoke(args=["webhooks", "disallow-host", "b.example.com"]).exit_code != 0
    assert runner.invoke(args=["webhooks", "allow-host", "https://x.example.com/"]).exit_code != 0
    assert runner.invoke(args=["webhooks", "hosts"]).output.splitlines()[-1] == "1 hosts"


@pytest.mark.parametrize("host", [
    "169.254.169.254", "127.0.0.1", "[::1]", "10.0.0.7", "192.168.1.1", "100.64.0.1",
    "[::ffff:127.0.0.1]", "[2002:7f00:1::]", "[64:ff9b::a9fe:a9fe]", "[fd00::1]", "0.0.0.0",
])
def test_allow_host_refuses_internal_addresses_in_one_line(app, host):
    result = app.test_cli_runner().invoke(args=["webhooks", "allow-host", host])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [result.stderr.strip()] and "internal address" in result.stderr
    assert app.test_cli_runner().invoke(args=["webhooks", "hosts"]).output.splitlines() == ["0 hosts"]


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1",
                                  "169.254.43518", "hooks.example.com.123"])
def test_allow_host_refuses_ipv4_in_shortened_or_numeric_form(app, host):
    result = app.test_cli_runner().invoke(args=["webhooks", "allow-host", host])
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "a.b.c.d" in result.stderr


def test_allow_host_takes_public_addresses_and_names(app):
    runner = app.test_cli_runner()
    for host, stored in (("8.8.8.8", "8.8.8.8"), ("[2606:4700::1111]", "2606:4700::1111"),
                         ("hooks.example.com", "hooks.example.com"), ("1.example.com", "1.example.com")):
        result = runner.invoke(args=["webhooks", "allow-host", host])
        assert (result.exit_code, result.output.splitlines()[-1]) == (0, stored)


def test_operator_dead_letters_and_replay_commands(app, session, tenant):
    target = endpoint(session, tenant.company_id)
    recorded = event(session, tenant.company_id, "sale.returned")
    dispatch(session)
    session.execute(update(WebhookDelivery).values(state="DEAD", attempts=8, last_status=503,
                                                   last_error="HTTP 503"))
    session.commit()
    runner = app.test_cli_runner()

    lines = runner.invoke(args=["webhooks", "dead-letters"]).output.splitlines()
    assert lines[-1] == "1 dead deliveries"
    assert lines[0].split("\t") == [recorded.id, "sale.returned", tenant.company_id, target.id,
                                    target.url, "8", "503", "HTTP 503"]
    replayed = runner.invoke(args=["webhooks", "replay", recorded.id])
    assert replayed.exit_code == 0 and replayed.output.splitlines()[-1] == "replaying 1 deliveries"
    assert runner.invoke(args=["webhooks", "dead-letters"]).output == "0 dead deliveries\n"
    missing = runner.invoke(args=["webhooks", "replay", recorded.id])
    assert missing.exit_code != 0 and "no dead deliveries" in missing.output
    replays = session.scalars(select(AuditEvent).where(
        AuditEvent.action == "webhook_event.replayed")).all()
    assert [(e.company_id, e.target_id, e.actor_kind) for e in replays] == [
        (tenant.company_id, recorded.id, "OPERATOR")]


@pytest.mark.redis
def test_upkeep_enqueues_what_the_outbox_still_holds(app, session, tenant):
    from redis import Redis
    from rq import Queue

    from worker.periodic import run_periodic_tasks

    endpoint(session, tenant.company_id)
    event(session, tenant.company_id)
    [(company_id, delivery_id)] = dispatch(session)
    stray = event(session, tenant.company_id)
    session.execute(update(OutboxEvent).where(OutboxEvent.id == stray.id)
                    .values(created_at=utcnow() - timedelta(minutes=1)))
    session.execute(update(WebhookDelivery).values(next_attempt_at=utcnow() - timedelta(minutes=5)))
    session.commit()
    settings = app.config["SETTINGS"]
    queue = Queue(settings.rq_queue, connection=Redis.from_url(settings.redis_url))
    queue.empty()

    assert run_periodic_tasks(app)["webhook outbox sweep"] == 2

    calls = {(job.func_name, repr(job.args)) for job in queue.get_jobs()}
    queue.empty()
    assert calls == {("worker.jobs.dispatch_events", "()"),
                     ("worker.jobs.deliver", repr((company_id, delivery_id)))}


@pytest.mark.redis
def test_a_burst_of_commits_asks_for_one_dispatch_run(app):
    from redis import Redis
    from rq import Queue

    from app.operations.delivery_queue import dispatch_flag_key, dispatch_started, request_dispatch
    from app.operations.delivery_queue import hand_over_events

    settings = app.config["SETTINGS"]
    redis = Redis.from_url(settings.redis_url)
    queue = Queue(settings.rq_queue, connection=redis)
    queue.empty()
    redis.delete(dispatch_flag_key(settings))

    for n in range(20):  # what twenty committed requests do
        hand_over_events(app, [("company", f"event-{n}")])
    assert [job.func_name for job in queue.get_jobs()] == ["worker.jobs.dispatch_events"]

    dispatch_started(settings)  # the run starts: later commits ask for the next one
    hand_over_events(app, [("company", "later")])
    request_dispatch(settings, force=True)  # the sweep asks even while one is requested
    assert len(queue.get_jobs()) == 3
    queue.empty()
    redis.delete(dispatch_flag_key(settings))
