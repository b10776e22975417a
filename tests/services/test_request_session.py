"""A request's transaction (RequestSession): the unit of work on a pooled connection, the ORM
session made only when something asks for it, and both in one transaction whichever comes
first: a commit keeps what each wrote, a rollback takes back what each wrote, and writes after
a commit in the middle of a request (a report's, a wrong OTP code's) are committed too. On
PostgreSQL its BEGIN and COMMIT travel in the statements' text, and no connection goes back to
the pool inside a transaction."""
import pytest
from psycopg2.extensions import TRANSACTION_STATUS_IDLE, TRANSACTION_STATUS_INERROR
from sqlalchemy import bindparam, event, func, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError

from app.db import make_engine, utcnow
from app.models import Company
from app.services.sessions import RequestSession, WorkSession
from app.services.unit_of_work import UnitOfWork

COMPANIES = Company.__table__
_ADD = insert(COMPANIES)
_NAMES = select(COMPANIES.c.name).where(COMPANIES.c.name.in_(bindparam("names", expanding=True)))
_NAMED = select(COMPANIES.c.id).where(COMPANIES.c.name == bindparam("name"))


@pytest.fixture
def request_session(app):
    session = RequestSession(app.extensions["session_factory"])
    yield session
    session.rollback()
    session.close()


def add_by_work(session, name: str) -> None:
    UnitOfWork.of(session).defer(_ADD, {"id": f"id-{name}", "name": name, "created_at": utcnow()})


def add_by_orm(session, name: str) -> None:
    session.add(Company(id=f"id-{name}", name=name, created_at=utcnow()))


def committed(db, *names: str) -> set:
    db.expire_all()
    return set(db.scalars(_NAMES, {"names": list(names)}))


def test_the_unit_of_work_alone_makes_no_orm_session(request_session, db, monkeypatch):
    made = []
    monkeypatch.setattr(WorkSession, "__init__", lambda self, *a, **k: made.append(self))
    add_by_work(request_session, "Alone")
    request_session.commit()
    assert made == []
    assert committed(db, "Alone") == {"Alone"}


@pytest.mark.parametrize("sent", [False, True])
@pytest.mark.parametrize("first", ["work", "orm"])
def test_a_commit_keeps_what_both_wrote_whichever_came_first(request_session, db, first, sent):
    writes = [add_by_work, add_by_orm] if first == "work" else [add_by_orm, add_by_work]
    writes[0](request_session, "First")
    if sent:  # the unit of work's BEGIN already on the server when the ORM joins (or not)
        UnitOfWork.of(request_session).send()
    writes[1](request_session, "Second")
    request_session.commit()
    events = request_session.take_committed_events()
    assert committed(db, "First", "Second") == {"First", "Second"}
    assert events == []


@pytest.mark.parametrize("first", ["work", "orm"])
def test_a_rollback_takes_back_what_both_wrote(request_session, db, first):
    writes = [add_by_work, add_by_orm] if first == "work" else [add_by_orm, add_by_work]
    writes[0](request_session, "First")
    UnitOfWork.of(request_session).send()
    writes[1](request_session, "Second")
    request_session.flush()
    request_session.rollback()
    request_session.commit()  # as a request's end would after a rollback: nothing is left
    assert committed(db, "First", "Second") == set()


@pytest.mark.parametrize("orm_before", [False, True])
def test_writes_after_a_commit_in_the_middle_are_committed_at_the_end(request_session, db,
                                                                       orm_before):
    if orm_before:
        add_by_orm(request_session, "Before")
    else:
        add_by_work(request_session, "Before")
    request_session.commit()
    assert not request_session.in_transaction()
    add_by_work(request_session, "After")  # straight to the driver, which begins by itself
    UnitOfWork.of(request_session).send()
    assert request_session.in_transaction()
    request_session.commit()
    request_session.close()
    assert committed(db, "Before", "After") == {"Before", "After"}


@pytest.mark.postgres
def test_a_commit_that_fails_hands_over_no_events(request_session, db):
    """The recorded events reach the delivery queue only once their transaction committed: a
    commit lost with its connection (here the server ends it) leaves none to hand over."""
    work = UnitOfWork.of(request_session)
    work.events.append("recorded")
    backend = request_session.connection().exec_driver_sql("SELECT pg_backend_pid()").scalar()
    db.execute(select(func.pg_terminate_backend(backend)))
    with pytest.raises(DBAPIError):
        request_session.commit()
    assert request_session.take_committed_events() == []


@pytest.fixture
def sent_text(app):
    seen = []

    def record(conn, cursor, statement, *rest):
        seen.append(statement)

    engine = app.extensions["engine"]
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


@pytest.mark.postgres
def test_begin_and_commit_travel_with_the_statements(request_session, db, sent_text):
    """psycopg2 sends no BEGIN or COMMIT of its own: the first string carries the BEGIN, the
    commit's writes the COMMIT, so a request pays no round trip for either."""
    add_by_work(request_session, "Text")
    assert UnitOfWork.of(request_session).run(_NAMED, {"name": "Text"}).scalar() == "id-Text"
    add_by_work(request_session, "Later")
    driver = request_session.connection_for_work().connection.dbapi_connection
    request_session.commit()
    assert [text.split(None, 1)[0] for text in sent_text] == ["BEGIN;", "INSERT"]
    assert sent_text[0].count(";\n") == 2 and sent_text[1].endswith(";\nCOMMIT")
    assert (driver.get_transaction_status(), driver.autocommit) == (TRANSACTION_STATUS_IDLE, False)
    assert committed(db, "Text", "Later") == {"Text", "Later"}


@pytest.mark.postgres
def test_a_read_only_transaction_sends_its_commit_alone_and_an_unused_one_none(
        request_session, sent_text):
    UnitOfWork.of(request_session).run(_NAMED, {"name": "nobody"})
    request_session.commit()
    UnitOfWork.of(request_session)  # begun, never used
    request_session.commit()
    assert [text.split(None, 1)[0] for text in sent_text] == ["BEGIN;", "COMMIT"]


@pytest.mark.postgres
def test_a_commit_whose_writes_fail_leaves_nothing_open(request_session, db):
    """The writes and the COMMIT are one string: a write that fails stops it before the
    COMMIT; the request's close then rolls the transaction back on the server and gives the
    driver its own transactions again before the connection goes back to the pool."""
    add_by_work(request_session, "Twice")
    UnitOfWork.of(request_session).send()
    add_by_work(request_session, "Twice")  # the same id: fails at the commit
    driver = request_session.connection_for_work().connection.dbapi_connection
    with pytest.raises(IntegrityError):
        request_session.commit()
    assert driver.get_transaction_status() == TRANSACTION_STATUS_INERROR
    request_session.close()
    assert (driver.get_transaction_status(), driver.autocommit) == (TRANSACTION_STATUS_IDLE, False)
    assert committed(db, "Twice") == set()


@pytest.mark.postgres
def test_the_pool_replaces_a_connection_handed_back_inside_a_transaction(app):
    """Belt and braces: a connection that came back in autocommit with a transaction open on
    the server (the pool's rollback does nothing then) is never handed out again."""
    engine = make_engine(app.extensions["engine"].url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection:
            left = connection.connection.dbapi_connection
            left.autocommit = True
            connection.exec_driver_sql("BEGIN")
        assert not left.closed  # back in the pool, still inside its transaction
        with engine.connect() as connection:
            given = connection.connection.dbapi_connection
            assert given is not left and left.closed
            assert given.get_transaction_status() == TRANSACTION_STATUS_IDLE
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_connection_asked_for_before_any_statement_is_the_drivers_own(request_session, db):
    """Anything but the unit of work that asks for the connection before the BEGIN went gets
    the driver's usual transaction (a named cursor refuses autocommit)."""
    connection = request_session.connection()
    assert connection.connection.dbapi_connection.autocommit is False
    rows = connection.execution_options(stream_results=True).execute(_NAMED, {"name": "x"})
    assert rows.all() == []
    add_by_work(request_session, "Driver")
    request_session.commit()
    assert committed(db, "Driver") == {"Driver"}


@pytest.mark.postgres
def test_a_statement_sqlalchemy_sends_first_still_begins_the_transaction(request_session, db):
    """The unit of work's first statement going through SQLAlchemy's execution (an empty IN
    list) sends the BEGIN it owes before it: it does not run on its own in autocommit."""
    driver = request_session.connection_for_work().connection.dbapi_connection
    assert UnitOfWork.of(request_session).run(_NAMES, {"names": []}).all() == []
    assert driver.get_transaction_status() != TRANSACTION_STATUS_IDLE


@pytest.mark.postgres
def test_a_rollback_that_cannot_be_sent_leaves_the_connection_invalidated(request_session, db):
    """The server gone mid-transaction: the request's rollback does not raise over the error
    being answered, and the connection is discarded rather than handed back to the pool."""
    backend = UnitOfWork.of(request_session).run(select(func.pg_backend_pid()), {}).scalar()
    connection = request_session.connection_for_work()
    driver = connection.connection.dbapi_connection
    assert driver.autocommit  # in text, its BEGIN sent with the statement above
    db.execute(select(func.pg_terminate_backend(backend)))
    request_session.rollback()
    assert connection.invalidated and driver.closed
    request_session.close()
