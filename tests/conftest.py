"""Fixtures on real databases. The suite runs on SQLite by default and on PostgreSQL when
DATABASE_URL names one (`make test` runs both passes). Each test session builds a fresh
database of its own by running the migrations, and every test starts from empty tables.

With TEST_THROUGH_PGBOUNCER=1 (the second PostgreSQL pass of `make test`), the app reaches
that database through a PgBouncer in transaction pooling, and the database's own time zone is
Asia/Kathmandu (tests/bouncer.py); fixtures that administer the server still go straight to it.

Under CI=true a test that needs PostgreSQL, Redis or PgBouncer fails when it is missing;
elsewhere it is skipped with the reason.
"""
from __future__ import annotations

import os
import uuid
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import sessionmaker

from app import create_app
from app.config import Settings, normalise_database_url
from app.database.engine import Base, add_unicode_lower
from app.database.migrate import upgrade
from app.services.transactions import WorkSession
from testbed.tenants import make_tenant
from tests import bouncer
from tests.customer_names import names_out_of_step
from tests.documented_errors import record_error_answers, undocumented

IN_CI = os.environ.get("CI", "").lower() == "true"
SUITE_DATABASE_URL = normalise_database_url(os.environ.get("DATABASE_URL", ""))
ON_POSTGRES = SUITE_DATABASE_URL.startswith("postgresql")
THROUGH_PGBOUNCER = ON_POSTGRES and os.environ.get("TEST_THROUGH_PGBOUNCER") == "1"
REDIS_URL = os.environ.get("REDIS_URL", "")
TEST_PEPPER = "test-pepper"


def pytest_runtest_setup(item):
    if "pgbouncer" in item.keywords and ON_POSTGRES and not THROUGH_PGBOUNCER:
        pytest.skip("the PgBouncer pass of `make test` runs it (TEST_THROUGH_PGBOUNCER=1)")
    needs = [name for name, present in (("postgres", ON_POSTGRES), ("redis", bool(REDIS_URL)))
             if name in item.keywords and not present]
    if not needs:
        return
    without(f"needs {' and '.join(needs)}: the PostgreSQL + Redis pass of `make test` runs it")


def without(prerequisite: str) -> None:
    """A test's prerequisite is missing: it fails under CI=true, elsewhere it is skipped."""
    if IN_CI:
        pytest.fail(prerequisite, pytrace=False)
    pytest.skip(prerequisite)


def _create_postgres_database(server_url: str) -> str:
    name = f"loyalty_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def _drop_postgres_database(server_url: str, url: str) -> None:
    name = make_url(url).database
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory):
    if ON_POSTGRES:
        url = _create_postgres_database(SUITE_DATABASE_URL)
        try:
            with _as_the_app_reaches(url) as reached:
                upgrade(reached)
                yield reached
        finally:
            _drop_postgres_database(SUITE_DATABASE_URL, url)
    else:
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'loyalty.db'}"
        upgrade(url)
        yield url


@contextmanager
def _as_the_app_reaches(url: str):
    """The suite's database as the app reaches it: straight, or in the PgBouncer pass through
    a PgBouncer in transaction pooling, the database's own time zone not UTC."""
    if not THROUGH_PGBOUNCER:
        yield url
        return
    if bouncer.PGBOUNCER is None:
        without("TEST_THROUGH_PGBOUNCER needs pgbouncer (apt-get install pgbouncer)")
    database = make_url(url).database
    bouncer.set_own_time_zone(SUITE_DATABASE_URL, database)
    with bouncer.running_pgbouncer(SUITE_DATABASE_URL) as through:
        yield through(database)


@pytest.fixture
def fresh_database(tmp_path):
    """An empty database of its own, for migrating step by step."""
    if ON_POSTGRES:
        url = _create_postgres_database(SUITE_DATABASE_URL)
        yield url
        _drop_postgres_database(SUITE_DATABASE_URL, url)
    else:
        yield f"sqlite:///{tmp_path / 'migrated.db'}"


@pytest.fixture(scope="session")
def settings(database_url):
    return Settings(database_url=database_url, redis_url=REDIS_URL or None,
                    api_key_pepper=TEST_PEPPER, rq_queue=f"loyalty-test-{uuid.uuid4().hex[:8]}",
                    webhook_retry_schedule="1,1", log_level="WARNING", development=False)


@pytest.fixture(scope="session")
def app(settings):
    app = create_app(settings)
    record_error_answers(app)
    _APPS.append(app)
    return app


_APPS: list = []


def pytest_sessionfinish(session, exitstatus):
    """The errors the suite met, each listed in the interface document (tests/documented_errors)."""
    missing = [line for app in _APPS for line in undocumented(app)]
    if missing:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        reporter.write_line("answers the interface document does not list:\n  "
                            + "\n  ".join(missing), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _empty_tables(request):
    """Every test starts from empty tables (the schema stays), and ends with every customer's
    directory name row in step with the customer, whichever way the test wrote customers."""
    yield
    if "app" not in request.fixturenames:
        return
    engine = request.getfixturevalue("app").extensions["engine"]
    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    # DELETE, children first, on both databases: a test leaves a few rows, and PostgreSQL's
    # TRUNCATE of every table costs 0.15-0.8 s per test against ~10 ms for these deletes.
    with engine.begin() as connection:
        drifted = names_out_of_step(connection)
        for table in tables:
            connection.execute(text(f"DELETE FROM {table}"))
    assert not drifted, f"customers without their directory name row in step: {drifted}"


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def _checking_sessions(app, database_url):
    """Sessions for the tests' own arranging and checking. On SQLite they use plain deferred
    transactions, so a test's read never holds the write lock the app's requests wait for."""
    if not database_url.startswith("sqlite"):
        yield app.extensions["session_factory"]
        return
    engine = create_engine(database_url, connect_args={"timeout": 30})
    # The app's lower(): helpers that write customers write their name rows with it.
    event.listen(engine, "connect", lambda connection, _record: add_unicode_lower(connection))
    yield sessionmaker(engine, class_=WorkSession, expire_on_commit=False)
    engine.dispose()


@pytest.fixture
def db(_checking_sessions):
    """A session of our own for arranging and checking, outside any request. Commit what
    you arrange; reads see the latest committed state after `db.expire_all()`."""
    session = _checking_sessions()
    yield session
    session.rollback()
    session.close()


@pytest.fixture
def tenant(app):
    return make_tenant(app, "Test Shop")


@pytest.fixture
def other_tenant(app):
    return make_tenant(app, "Other Shop")


@pytest.fixture
def idem():
    """A fresh Idempotency-Key header value each call."""
    return lambda: uuid.uuid4().hex
