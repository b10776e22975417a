"""Redis is never on the register's path (docs/api.md#availability): with Redis unreachable,
requests succeed, their events wait in the outbox for the sweep, and the web asks Redis again only
after a pause instead of on every request."""
from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from sqlalchemy import func, select

from app import create_app
from app.models import OutboxEvent
from testbed.ports import free_port




@pytest.fixture
def app_without_redis(settings):
    return create_app(replace(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0"))


def test_enrolments_succeed_and_their_events_wait_while_redis_is_away(
        app_without_redis, tenant, db, caplog):
    client = app_without_redis.test_client()
    with caplog.at_level(logging.WARNING, logger="app.operations.delivery_queue"):
        for n in range(3):
            with client.post("/v1/customers", headers=tenant.headers(),
                             json={"phone": f"+7916000000{n}", "firstName": "Ира"}) as answer:
                assert answer.status_code == 201, answer.get_data(as_text=True)
            # closing the answer runs the after-response enqueue
    waiting = db.scalar(select(func.count()).select_from(OutboxEvent)
                        .where(OutboxEvent.dispatched_at.is_(None)))
    assert waiting == 3
    warnings = [r for r in caplog.records if "Redis unreachable" in r.getMessage()]
    assert len(warnings) == 1  # the next requests within the pause did not ask Redis
