"""app.statements.run: prebuilt statements straight on the driver behave as Connection.execute
does for what the register's path uses (rows by name, rowcount, errors, listeners); deferred
writes are in place before anything reads, go with a commit, and go away with a rollback."""
import pytest
from sqlalchemy import bindparam, event, insert, select, update
from sqlalchemy.exc import IntegrityError

from app.db import utcnow
from app.models import Company
from app.statements import defer, run

COMPANIES = Company.__table__
_ADD = insert(COMPANIES)
_NAMED = select(COMPANIES.c.id, COMPANIES.c.name, COMPANIES.c.created_at.label("since")).where(
    COMPANIES.c.name == bindparam("name"))
_RENAME = update(COMPANIES).where(COMPANIES.c.name == bindparam("old")).values(
    name=bindparam("new"))


@pytest.fixture
def session(app):
    session = app.extensions["session_factory"]()
    yield session
    session.rollback()
    session.close()


def test_rows_rowcount_and_the_listeners(app, session):
    seen = []
    engine = app.extensions["engine"]
    def listener(conn, cursor, statement, *rest):
        seen.append(statement.split()[0])

    event.listen(engine, "before_cursor_execute", listener)
    try:
        now = utcnow()
        run(session, _ADD, {"id": "c-1", "name": "One", "created_at": now})
        run(session, _ADD, {"id": "c-2", "name": "Two", "created_at": now})
        row = run(session, _NAMED, {"name": "One"}).one()
        assert (row.id, row.name, row[0]) == ("c-1", "One", "c-1")
        assert row.since == now  # the same instant (PostgreSQL gives it in the server's zone)
        assert run(session, _NAMED, {"name": "none"}).first() is None
        assert run(session, _NAMED, {"name": "Two"}).scalar() == "c-2"
        assert [tuple(r)[:2] for r in run(session, _NAMED, {"name": "Two"})] == [("c-2", "Two")]
        assert run(session, _RENAME, {"old": "Two", "new": "Deux"}).rowcount == 1
        assert run(session, _RENAME, {"old": "Two", "new": "Deux"}).rowcount == 0
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert seen.count("INSERT") == 2 and seen.count("SELECT") == 4 and seen.count("UPDATE") == 2


def test_errors_come_out_as_sqlalchemys(session):
    run(session, _ADD, {"id": "c-1", "name": "One", "created_at": utcnow()})
    with pytest.raises(IntegrityError):
        run(session, _ADD, {"id": "c-1", "name": "Again", "created_at": utcnow()})


def test_a_naive_time_is_refused_as_the_column_type_refuses_it(session):
    from sqlalchemy.exc import StatementError
    with pytest.raises((ValueError, StatementError)):
        run(session, _ADD, {"id": "c-1", "name": "One",
                            "created_at": utcnow().replace(tzinfo=None)})


# defer: writes that travel with the next statement

def _names(session) -> list[str]:
    return sorted(session.scalars(select(COMPANIES.c.name)))


def test_deferred_writes_are_in_place_for_whatever_reads_next(app, session):
    now = utcnow()
    defer(session, _ADD, [{"id": "c-1", "name": "One", "created_at": now},
                          {"id": "c-2", "name": "Two", "created_at": now}])
    defer(session, _RENAME, {"old": "Two", "new": "Deux"})
    assert run(session, _NAMED, {"name": "Deux"}).scalar() == "c-2"  # a prebuilt read
    defer(session, _ADD, {"id": "c-3", "name": "Three", "created_at": now})
    assert _names(session) == ["Deux", "One", "Three"]  # an ORM read


def test_deferred_writes_share_the_next_round_trip_on_postgresql(app, session):
    seen = []
    engine = app.extensions["engine"]

    def listener(conn, cursor, statement, *rest):
        if not statement.startswith("BEGIN"):  # SQLite's own BEGIN IMMEDIATE
            seen.append(statement)

    now = utcnow()
    event.listen(engine, "before_cursor_execute", listener)
    try:
        defer(session, _ADD, {"id": "c-1", "name": "One", "created_at": now})
        defer(session, _ADD, {"id": "c-2", "name": "Two", "created_at": now})
        assert run(session, _NAMED, {"name": "Two"}).scalar() == "c-2"
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    trips = 1 if engine.dialect.name == "postgresql" else 3
    assert len(seen) == trips and seen[-1].lstrip().startswith("SELECT" if trips == 3 else "INSERT")


def test_a_commit_sends_them_and_a_rollback_drops_them(app, session):
    now = utcnow()
    defer(session, _ADD, {"id": "c-1", "name": "Kept", "created_at": now})
    session.commit()
    defer(session, _ADD, {"id": "c-2", "name": "Dropped", "created_at": now})
    session.rollback()
    assert _names(session) == ["Kept"]


def test_a_failing_deferred_write_fails_the_statement_that_carries_it(session):
    now = utcnow()
    run(session, _ADD, {"id": "c-1", "name": "One", "created_at": now})
    with pytest.raises(IntegrityError):
        defer(session, _ADD, {"id": "c-1", "name": "Again", "created_at": now})  # SQLite: here
        run(session, _NAMED, {"name": "One"})  # PostgreSQL: with the statement carrying it
