"""Engine, the session a request or job owns, and the declarative base.

The request owns the transaction: `request_session()` hands the same session to
everything in one request, and the app commits or rolls it back as a whole when the
response is ready.
"""
from __future__ import annotations

import select
from datetime import datetime, timezone

from flask import current_app, g
from sqlalchemy import DateTime, Engine, MetaData, create_engine, event, exc
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import DeclarativeBase, Session
from sqlalchemy.types import TypeDecorator

from app.config import normalise_database_url
from app.database.timestamptz import read_timestamps_as_utc

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class UtcDateTime(TypeDecorator):
    """Aware UTC datetimes on both databases (SQLite keeps no zone of its own)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def conflict_insert(dialect_name: str, table):
    """An INSERT that takes ON CONFLICT clauses, in the dialect named: PostgreSQL and SQLite
    spell them alike, but each has its own construct."""
    return (postgresql if dialect_name == "postgresql" else sqlite).insert(table)


def insert_of(session: Session, model):
    """`conflict_insert` of a model's table in the session's own dialect."""
    return conflict_insert(session.get_bind().dialect.name, model.__table__)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _unicode_lower(value):
    return value.lower() if isinstance(value, str) else value


def add_unicode_lower(dbapi_connection) -> None:
    """SQLite's own lower() folds ASCII only; case-insensitive search of Cyrillic names (and
    the directory's name rows, written with lower()) must behave as on PostgreSQL."""
    dbapi_connection.create_function("lower", 1, _unicode_lower, deterministic=True)


def make_engine(url: str) -> Engine:
    # A failing statement's parameters (phones, names, idempotency keys) never reach a log:
    # SQLAlchemy's error text shows the statement alone (docs/api.md#cards).
    if url.startswith("sqlite"):
        engine = create_engine(url, hide_parameters=True,
                               connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_connection, _record):
            # We issue BEGIN ourselves (below), so the driver must not.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()
            add_unicode_lower(dbapi_connection)

        @event.listens_for(engine, "begin")
        def _sqlite_begin(connection):
            # IMMEDIATE takes the write lock up front: concurrent gunicorn workers queue on
            # busy_timeout instead of failing with "database is locked" on lock upgrade.
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    # No startup options and no session settings: PgBouncer in transaction pooling refuses
    # the one and would leak the other. The session's time zone is the database's own, so
    # the driver is given a reader of timestamptz that answers in UTC (app/database/timestamptz.py).
    engine = create_engine(normalise_database_url(url), pool_size=5, max_overflow=10,
                           pool_recycle=1800, hide_parameters=True)
    event.listen(engine, "connect", read_timestamps_as_utc)
    event.listen(engine, "checkout", _discard_if_closed_by_server)
    return engine


def _discard_if_closed_by_server(dbapi_connection, _record, _proxy) -> None:
    """A pooled connection the server has closed (a restart, an idle timeout) is replaced
    before a request uses it. An idle connection of ours has nothing to read: if its socket
    is readable, the server has sent its goodbye or the socket is shut. One poll, no round
    trip (a pre-ping would cost one on every request)."""
    if dbapi_connection.closed:
        raise exc.DisconnectionError("connection closed")
    poller = select.poll()  # not select.select: it fails on descriptors past 1024
    poller.register(dbapi_connection.fileno(), select.POLLIN)
    if poller.poll(0):
        raise exc.DisconnectionError("the server closed the connection")


def request_session() -> Session:
    """The session of the current request or job context, opened on first use: a
    RequestSession, which makes the ORM's own only if something uses it
    (app/services/transactions.py)."""
    state = g._get_current_object()  # one proxy lookup, not two (app/web/requests.py)
    session = state.get("db_session")
    if session is None:
        app = current_app._get_current_object()
        session = state.db_session = app.extensions["request_session"]()
    return session


# SQLSTATEs that mean the server is gone or going, not that the statement was wrong:
# connection exceptions (08…), and admin shutdown, crash shutdown, "cannot connect now".
_UNAVAILABLE_STATES = ("08", "57P01", "57P02", "57P03")


def database_unavailable(error: BaseException) -> bool:
    """Whether a database error means the server cannot be reached (a 503 to retry), rather
    than a fault of ours (a 500). SQLite, a file, is never 'unavailable'."""
    if not isinstance(error, exc.DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    original = error.orig
    if type(original).__module__.split(".")[0] != "psycopg2":
        return False
    state = getattr(original, "pgcode", None)
    if state is None:  # refused at connect, or the socket broke: libpq's own errors
        return isinstance(error, exc.OperationalError)
    return state.startswith(_UNAVAILABLE_STATES)
