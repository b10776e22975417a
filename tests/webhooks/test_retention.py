"""Retention (docs/api.md#availability): the periodic job prunes delivered events and expired
idempotency records in batches; dead letters stay until replayed or purged by the operator."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, func, insert, select, update

from app.database.engine import utcnow
from app.models import IdempotencyRecord, OutboxEvent, WebhookDelivery
from app.services.operations import retention
from app.services.webhooks import delivery, endpoints, history
from app.services.webhooks.outbox import record_event
from app.operations.upkeep import in_batches
from tests.conftest import TEST_PEPPER
from worker.periodic import run_periodic_tasks

LONG_AGO = timedelta(days=40)  # beyond the default 30 days


@pytest.fixture
def two_endpoints(db, tenant):
    """Two endpoints of the tenant, each wanting every event."""
    endpoints.allow_host(db, "hooks.example.com", now=utcnow())
    made = [endpoints.create_endpoint(db, tenant.company_id, url=f"https://hooks.example.com/{n}",
                                      events=["*"], description=None, pepper=TEST_PEPPER,
                                      now=utcnow())[0] for n in (1, 2)]
    db.commit()
    return made


def dispatched_event(session, company_id, *, age, states=("DELIVERED", "DELIVERED")):
    """An event dispatched `age` ago whose deliveries are in `states` (an endpoint each; none:
    no endpoint wanted it); `states=None`: not dispatched yet."""
    event = record_event(session, company_id, "customer.created", {"id": "c-1"})
    session.flush()
    if states is not None:
        delivery.dispatch_pending(session, now=utcnow(), limit=1000)
        made = _deliveries_of(session, event.id)
        for delivery_id, state in zip(made, states):
            session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
                            .values(state=state))
        session.execute(delete(WebhookDelivery).where(WebhookDelivery.id.in_(made[len(states):])))
    session.execute(update(OutboxEvent).where(OutboxEvent.id == event.id).values(
        created_at=utcnow() - age, dispatched_at=None if states is None else utcnow() - age))
    session.commit()
    return event.id


def _deliveries_of(session, event_id):
    return list(session.scalars(select(WebhookDelivery.id)
                                .where(WebhookDelivery.event_id == event_id)
                                .order_by(WebhookDelivery.endpoint_id)))


def _events(db):
    db.expire_all()
    return set(db.scalars(select(OutboxEvent.id)))


def test_old_delivered_events_go_and_the_rest_stay(app, db, tenant, two_endpoints):
    old_delivered = dispatched_event(db, tenant.company_id, age=LONG_AGO)
    old_without_endpoint_match = dispatched_event(db, tenant.company_id, age=LONG_AGO, states=())
    recent_delivered = dispatched_event(db, tenant.company_id, age=timedelta(days=29))
    old_dead = dispatched_event(db, tenant.company_id, age=LONG_AGO,
                                states=("DELIVERED", "DEAD"))
    old_retrying = dispatched_event(db, tenant.company_id, age=LONG_AGO,
                                    states=("RETRYING", "DELIVERED"))
    old_waiting = dispatched_event(db, tenant.company_id, age=LONG_AGO, states=None)

    assert run_periodic_tasks(app)["prune delivered events"] == 2

    assert _events(db) == {recent_delivered, old_dead, old_retrying, old_waiting}
    assert old_without_endpoint_match not in _events(db)
    assert _deliveries_of(db, old_delivered) == []
    assert len(_deliveries_of(db, old_dead)) == len(_deliveries_of(db, old_retrying)) == 2
    assert len(_deliveries_of(db, recent_delivered)) == 2
    # The dead letter can still be replayed.
    assert history.replay_event(db, old_dead, now=utcnow())[0]
    db.rollback()
    assert run_periodic_tasks(app)["prune delivered events"] == 0


def test_pruning_goes_a_batch_per_transaction_and_stops_at_its_bound(app, db, tenant,
                                                                     two_endpoints):
    for _ in range(5):
        dispatched_event(db, tenant.company_id, age=LONG_AGO)
    commits = []

    def prune_two(limit):
        commits.append(limit)
        return retention.prune_delivered_events(db, before=utcnow() - timedelta(days=30),
                                                limit=limit)

    assert in_batches(db, prune_two, limit=2, most=2) == 4
    assert commits == [2, 2]
    assert len(_events(db)) == 1
    # What one run leaves, the next takes; a short batch ends the run.
    commits.clear()
    assert in_batches(db, prune_two, limit=2, most=5) == 1
    assert commits == [2] and _events(db) == set()


def test_a_shorter_retention_prunes_sooner(app, db, tenant, two_endpoints):
    import dataclasses

    from app import create_app

    dispatched_event(db, tenant.company_id, age=timedelta(days=8))
    week = create_app(dataclasses.replace(app.config["SETTINGS"], outbox_retention_days=7))
    assert run_periodic_tasks(week)["prune delivered events"] == 1
    assert _events(db) == set()


def _idempotency_record(db, company_id, key, age):
    db.execute(insert(IdempotencyRecord).values(
        company_id=company_id, operation="POST /v1/x", key=key, fingerprint="f" * 64,
        status_code=201, response_body="{}", created_at=utcnow() - age))


def test_expired_idempotency_records_are_purged_by_the_periodic_job(app, db, tenant):
    ttl = app.config["SETTINGS"].idempotency_ttl
    for n in range(3):
        _idempotency_record(db, tenant.company_id, f"old-{n}", timedelta(seconds=ttl + 60))
    _idempotency_record(db, tenant.company_id, "fresh", timedelta(seconds=ttl - 60))
    db.commit()

    assert run_periodic_tasks(app)["purge idempotency records"] == 3
    db.expire_all()
    assert list(db.scalars(select(IdempotencyRecord.key))) == ["fresh"]


def test_purge_dead_deletes_old_dead_letters_only(app, db, tenant, two_endpoints):
    old_dead = dispatched_event(db, tenant.company_id, age=LONG_AGO, states=("DEAD", "DEAD"))
    half_dead = dispatched_event(db, tenant.company_id, age=LONG_AGO,
                                 states=("DEAD", "DELIVERED"))
    recent_dead = dispatched_event(db, tenant.company_id, age=timedelta(days=2),
                                   states=("DEAD", "DEAD"))
    runner = app.test_cli_runner()

    result = runner.invoke(args=["webhooks", "purge-dead", "--older-than", "30"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "purged 3 dead deliveries"
    assert _events(db) == {half_dead, recent_dead}
    assert len(_deliveries_of(db, half_dead)) == 1
    assert old_dead not in _events(db)
    dead = db.scalar(select(func.count()).select_from(WebhookDelivery)
                     .where(WebhookDelivery.state == "DEAD"))
    assert dead == 2

    assert runner.invoke(args=["webhooks", "purge-dead", "--older-than", "0"]).output \
        .splitlines()[-1] == "purged 2 dead deliveries"
    for bad in (["--older-than", "-1"], ["--older-than", "x"], []):
        refused = runner.invoke(args=["webhooks", "purge-dead", *bad])
        assert refused.exit_code == 2 and "Traceback" not in refused.output
