"""Migration 0028: the expiry indexes of sessions and holds keep only the live rows, and the
upkeep's queries for what is due read them; the way down brings back (state, expires_at)."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, text

from app.database.engine import make_engine, utcnow
from app.database.migrate import alembic_config, upgrade
from app.services.checkout import holds

REVISION, BEFORE = "0028_expiry_indexes_partial", "0027_quote_lines_zlib"
INDEXES = {"checkout_sessions": "ix_checkout_sessions_expiry", "holds": "ix_holds_expiry"}


def _expiry_columns(engine) -> dict[str, list[str]]:
    with engine.connect() as connection:
        inspector = inspect(connection)
        return {table: [index["column_names"] for index in inspector.get_indexes(table)
                        if index["name"] == name][0] for table, name in INDEXES.items()}


def test_the_expiry_indexes_keep_only_live_rows_and_come_back_whole(fresh_database):
    upgrade(fresh_database, BEFORE)
    engine = make_engine(fresh_database)
    assert _expiry_columns(engine) == {table: ["state", "expires_at"] for table in INDEXES}

    upgrade(fresh_database, REVISION)
    assert _expiry_columns(engine) == {table: ["expires_at"] for table in INDEXES}

    command.downgrade(alembic_config(fresh_database), BEFORE)
    assert _expiry_columns(engine) == {table: ["state", "expires_at"] for table in INDEXES}
    engine.dispose()


@pytest.mark.postgres
def test_the_upkeeps_due_queries_read_the_live_rows_indexes(db):
    """PostgreSQL proves a partial index usable from the query's own states (bound by the
    driver); with sequential scans priced out, a query that could not use it shows none."""
    db.execute(text("SET LOCAL enable_seqscan = off"))
    cursor = db.connection().connection.cursor()
    for statement, index in ((holds.SESSIONS_DUE, "ix_checkout_sessions_expiry"),
                             (holds.HOLDS_DUE, "ix_holds_expiry")):
        expanded = statement.compile(dialect=db.get_bind().dialect).construct_expanded_state(
            {"now": utcnow(), "limit": 100})
        cursor.execute("EXPLAIN " + expanded.statement, expanded.parameters)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        assert index in plan, plan
