"""Migration 0024: the sessions' receipt index, which no query reads, goes (and comes back on
the way down); on PostgreSQL the idempotency records keep room on each page for the answer's
update."""
from __future__ import annotations

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from app.database.engine import make_engine
from app.database.migrate import alembic_config, upgrade

REVISION = "0024_checkout_database_share"


def _session_indexes(engine) -> set[str]:
    with engine.connect() as connection:
        return {index["name"] for index in inspect(connection).get_indexes("checkout_sessions")}


def _record_options(engine) -> list[str]:
    with engine.connect() as connection:
        return connection.scalar(text(
            "SELECT reloptions FROM pg_class WHERE relname = 'idempotency_records'")) or []


def test_the_unread_index_goes_and_the_records_keep_room(fresh_database):
    # The revision just before this one, whichever it is now.
    before = ScriptDirectory.from_config(alembic_config(fresh_database)).get_revision(
        REVISION).down_revision
    upgrade(fresh_database, before)
    engine = make_engine(fresh_database)
    postgresql = engine.dialect.name == "postgresql"
    assert "ix_checkout_sessions_receipt" in _session_indexes(engine)

    upgrade(fresh_database, REVISION)
    assert _session_indexes(engine) == {"ix_checkout_sessions_expiry"}
    if postgresql:
        assert _record_options(engine) == ["fillfactor=30"]

    command.downgrade(alembic_config(fresh_database), before)
    assert "ix_checkout_sessions_receipt" in _session_indexes(engine)
    if postgresql:
        assert _record_options(engine) == []
    engine.dispose()
