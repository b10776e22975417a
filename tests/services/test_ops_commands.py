"""`flask ops status` and `flask customers repair-names`: what an operator runs first, and
the repair after a rolling deploy."""
from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import pytest
from sqlalchemy import delete, func, insert, select, update

from app import create_app
from app.database.engine import utcnow
from app.database.migrate import upgrade
from app.models import CustomerName, IdempotencyRecord, OutboxEvent
from app.services.customers import profiles
from app.services.webhooks.outbox import record_event
from testbed.ports import free_port

CARDS = "http://127.0.0.1:8000"  # where card links point


def _status(app, exit_code: int = 0) -> dict:
    result = app.test_cli_runner().invoke(args=["ops", "status"])
    assert result.exit_code == exit_code, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def _app_with(app, **changes):
    return create_app(dataclasses.replace(app.config["SETTINGS"], **changes))


def test_status_reports_the_database_outbox_and_records(app, db, tenant):
    waiting = record_event(db, tenant.company_id, "customer.created", {"id": "c-1"})
    record_event(db, tenant.company_id, "customer.created", {"id": "c-2"})
    db.flush()
    db.execute(update(OutboxEvent).where(OutboxEvent.id == waiting.id)
               .values(created_at=utcnow() - timedelta(minutes=10)))
    db.execute(insert(IdempotencyRecord).values(
        company_id=tenant.company_id, operation="POST /v1/x", key="k" * 8, fingerprint="f" * 64,
        status_code=201, response_body="{}", created_at=utcnow()))
    db.commit()

    report = _status(app)
    assert report["database"] == {"reachable": True}
    assert report["migrations"]["atHead"] is True
    assert report["migrations"]["current"] == report["migrations"]["head"] != []
    assert report["outbox"]["waiting"] == 2
    assert 600 <= report["outbox"]["oldestWaitingSeconds"] < 3600
    assert report["deliveries"] == {"PENDING": 0, "RETRYING": 0, "DELIVERED": 0, "DEAD": 0}
    assert report["deadLetters"] == 0 and report["idempotencyRecords"] == 1
    assert report["redis"]["configured"] is bool(app.config["SETTINGS"].redis_url)


def test_status_says_when_the_database_and_redis_cannot_be_reached(app):
    port = free_port()
    down = _app_with(app, database_url=f"postgresql+psycopg2://postgres@127.0.0.1:{port}/none",
                     redis_url=f"redis://127.0.0.1:{port}/0")
    report = _status(down, exit_code=1)
    assert report["database"]["reachable"] is False and report["database"]["error"]
    assert report["outbox"] is None and report["migrations"] is None
    assert report["redis"]["configured"] is True and report["redis"]["reachable"] is False
    assert "connect" in report["redis"]["error"].lower()
    assert report["worker"]["lastHeartbeat"] is None


def test_status_fails_when_only_redis_cannot_be_reached(app):
    report = _status(_app_with(app, redis_url=f"redis://127.0.0.1:{free_port()}/0"), exit_code=1)
    assert report["database"] == {"reachable": True} and report["migrations"]["atHead"] is True
    assert report["redis"]["reachable"] is False


def test_status_notices_migrations_behind_the_code(app, fresh_database):
    upgrade(fresh_database, "0009_register_path_keys")
    report = _status(_app_with(app, database_url=fresh_database), exit_code=1)
    assert report["migrations"]["atHead"] is False
    assert report["migrations"]["current"] == ["0009_register_path_keys"]
    upgrade(fresh_database)
    assert _status(_app_with(app, database_url=fresh_database))["migrations"]["atHead"] is True


@pytest.mark.redis
def test_status_reads_the_worker_heartbeat_from_rq(app):
    from redis import Redis
    from rq import Queue, Worker

    settings = app.config["SETTINGS"]
    redis = Redis.from_url(settings.redis_url)
    worker = Worker([Queue(settings.rq_queue, connection=redis)], connection=redis)
    assert _status(app)["worker"]["workers"] == 0
    worker.register_birth()
    try:
        worker.heartbeat()
        report = _status(app)
        assert report["redis"] == {"configured": True, "reachable": True}
        assert report["worker"]["workers"] == 1
        assert 0 <= report["worker"]["heartbeatAgeSeconds"] < 60
        assert report["worker"]["lastHeartbeat"].endswith("Z")
    finally:
        worker.register_death()


def test_repair_names_writes_the_rows_a_rolling_deploy_left_out(app, db, tenant, other_tenant):
    runner = app.test_cli_runner()
    enrolled = [profiles.enrol_customer(db, company_id, phone=phone, first_name="Анна",
                                        last_name="Петрова", public_base_url=CARDS, now=utcnow()).customer
                for company_id, phone in ((tenant.company_id, "+79120000001"),
                                          (tenant.company_id, "+79120000002"),
                                          (other_tenant.company_id, "+79120000003"))]
    # What an older release does: customers without their directory name row.
    db.execute(delete(CustomerName))
    db.commit()

    repaired = runner.invoke(args=["customers", "repair-names", tenant.company_id])
    assert repaired.exit_code == 0, repaired.output
    assert repaired.output.splitlines()[-1] == "repaired 2 name rows"
    assert runner.invoke(args=["customers", "repair-names"]).output.splitlines()[-1] == \
        "repaired 1 name rows"
    assert runner.invoke(args=["customers", "repair-names"]).output.splitlines()[-1] == \
        "repaired 0 name rows"
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(CustomerName)) == len(enrolled)
    assert set(db.scalars(select(CustomerName.full_name))) == {"анна петрова"}

    unknown = runner.invoke(args=["customers", "repair-names", "no-such-company"])
    assert unknown.exit_code == 2 and "no company" in unknown.output
