"""The OTP code is nowhere at rest in the clear (docs/api.md#otp): its event's stored payload keeps
it encrypted until every delivery has ended, then drops it. The worker's own jobs run here in
the test process (no Redis needed), against a real HTTPS receiver, on both databases."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from sqlalchemy import select, text

from app import create_app
from app.database.engine import Base, utcnow
from app.operations.work import transaction
from app.models import OutboxEvent, WebhookDelivery
from app.services.webhooks import delivery
from tests.api.test_otp import challenge
from tests.webhooks.test_delivery import allow_loopback, register, verified
from worker import jobs


@pytest.fixture
def worker_app(settings, receiver, monkeypatch):
    """The worker's app: delivering to the receiver on 127.0.0.1, trusting its CA."""
    delivering = create_app(replace(settings, redis_url=None, webhook_allow_private_addresses=True,
                                    webhook_ca_bundle=receiver.ca_bundle))
    monkeypatch.setattr(jobs, "worker_app", lambda: delivering)
    allow_loopback(delivering)
    return delivering


def database_dump(app) -> str:
    """Every row of every table, as text: what a stolen backup would show."""
    with app.extensions["engine"].connect() as connection:
        return "\n".join(str(tuple(row)) for table in Base.metadata.sorted_tables
                         for row in connection.execute(text(f"SELECT * FROM {table.name}")))


def dispatch(app) -> None:
    """What the worker's dispatch job does, without the Redis bookkeeping around it."""
    with transaction(app) as session:
        delivery.dispatch_pending(session, now=utcnow(), limit=100)


def deliver_all(app) -> None:
    """A dispatch, then one attempt of each delivery by the worker's own job."""
    dispatch(app)
    with app.extensions["session_factory"]() as session:
        due = session.execute(select(WebhookDelivery.company_id, WebhookDelivery.id)
                              .where(WebhookDelivery.state == "PENDING")).all()
    for company_id, delivery_id in due:
        jobs.deliver(company_id, delivery_id)


def stored_code(app):
    with app.extensions["session_factory"]() as session:
        payload = session.scalar(select(OutboxEvent.payload)
                                 .where(OutboxEvent.type == "otp.code_issued"))
    return json.loads(payload)["data"]["code"]


def test_the_code_is_stored_encrypted_and_dropped_once_delivered(app, client, tenant, receiver,
                                                                 worker_app):
    secrets = {path: register(client, tenant, receiver.url(path), ["otp.code_issued"])[1]
               for path in ("/ok", "/target")}
    assert challenge(client, tenant).status_code == 201
    assert stored_code(app).startswith("gAAAA")  # a Fernet token, not six digits

    dispatch(worker_app)
    with app.extensions["session_factory"]() as session:
        first, second = session.execute(select(WebhookDelivery.company_id, WebhookDelivery.id)).all()
    jobs.deliver(*first)
    [hit] = receiver.hits
    code = verified(secrets[hit.path], hit)["data"]["code"]
    assert len(code) == 6 and code.isdigit()
    # One endpoint still waits for it: kept, encrypted.
    assert stored_code(app).startswith("gAAAA") and code not in database_dump(app)

    jobs.deliver(*second)
    last = receiver.hits[1]
    assert last.path != hit.path and verified(secrets[last.path], last)["data"]["code"] == code
    assert stored_code(app) is None
    assert code not in database_dump(app)


def test_the_code_is_dropped_when_its_delivery_dies(app, client, tenant, receiver, worker_app):
    register(client, tenant, receiver.url("/gone"), ["otp.code_issued"])
    assert challenge(client, tenant).status_code == 201
    deliver_all(worker_app)
    assert len(receiver.hits) == 1  # 410: the endpoint is disabled, the delivery dead
    assert stored_code(app) is None


def test_the_code_is_dropped_when_no_endpoint_wants_it(app, client, tenant, worker_app):
    assert challenge(client, tenant).status_code == 201
    deliver_all(worker_app)
    assert stored_code(app) is None
