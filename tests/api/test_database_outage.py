"""The database away (docs/api.md#availability, #errors's 503 rows): a 503 to retry, never a 500,
and a pooled connection the server closed meanwhile never fails a request."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from app import create_app
from testbed.ports import free_port
from tests.conftest import ON_POSTGRES

pytestmark = pytest.mark.postgres




@pytest.fixture
def unreachable_app(settings):
    url = f"postgresql+psycopg2://postgres@127.0.0.1:{free_port()}/loyalty"
    app = create_app(replace(settings, database_url=url))
    yield app
    app.extensions["engine"].dispose()


def test_requests_answer_503_while_the_database_cannot_be_reached(unreachable_app, tenant):
    client = unreachable_app.test_client()
    for method, path in (("get", "/v1/company"), ("post", "/v1/stores"), ("get", "/ready")):
        answer = getattr(client, method)(path, headers=tenant.headers(), json={"name": "S"})
        assert answer.status_code == 503, answer.get_data(as_text=True)
        expected = "not_ready" if path == "/ready" else "database_unavailable"
        assert answer.get_json()["code"] == expected
        if path != "/ready":
            assert answer.headers["Retry-After"] == "1"


def _terminate_the_apps_connections(app) -> int:
    """What a PostgreSQL restart does to a pool: the server ends every session it serves."""
    url = app.extensions["engine"].url
    admin = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    others = "FROM pg_stat_activity WHERE datname = :name AND pid <> pg_backend_pid()"
    with admin.connect() as connection:
        ended = connection.execute(text(f"SELECT count(pg_terminate_backend(pid)) {others}"),
                                   {"name": url.database}).scalar()
        # pg_terminate_backend only signals: wait until the sessions are gone, as they are
        # once a restarted server accepts connections again.
        for _ in range(100):
            if not connection.execute(text(f"SELECT count(*) {others}"),
                                      {"name": url.database}).scalar():
                break
            time.sleep(0.05)
    admin.dispose()
    return ended


def test_no_request_fails_for_a_pooled_connection_the_server_closed(app, client, tenant):
    assert ON_POSTGRES
    # Fill the pool with several live connections, then have the server end them all.
    engine = app.extensions["engine"]
    held = [engine.connect() for _ in range(3)]
    for connection in held:
        connection.execute(text("SELECT 1"))
        connection.close()
    assert engine.pool.checkedin() >= 3
    assert _terminate_the_apps_connections(app) >= 3
    for _ in range(6):  # more requests than dead connections in the pool
        answer = client.get("/v1/company", headers=tenant.headers())
        assert answer.status_code == 200, answer.get_data(as_text=True)
