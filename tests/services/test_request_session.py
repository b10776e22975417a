"""A request's transaction (RequestSession): the unit of work on a pooled connection, the ORM
session made only when something asks for it, and both in one transaction whichever comes
first: a commit keeps what each wrote, a rollback takes back what each wrote, and writes after
a commit in the middle of a request (a report's, a wrong OTP code's) are committed too; a
failed commit or a lost connection leaves nothing open."""
import pytest
from sqlalchemy import bindparam, func, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError

from app.database.engine import utcnow
from app.models import Company
from app.services.transactions import RequestSession, WorkSession
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
    add_by_work(request_session, "After")  # a transaction begun anew
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


def test_a_commit_whose_writes_fail_leaves_nothing_committed(request_session, db):
    """A deferred write that fails at the commit fails the commit; the request's close rolls
    the transaction back, and nothing of it is kept."""
    add_by_work(request_session, "Twice")
    UnitOfWork.of(request_session).send()
    add_by_work(request_session, "Twice")  # the same id: fails at the commit
    with pytest.raises(IntegrityError):
        request_session.commit()
    request_session.close()
    assert not request_session.in_transaction()
    assert committed(db, "Twice") == set()


def test_an_empty_in_list_is_sent_as_sqlalchemy_writes_it(request_session):
    assert UnitOfWork.of(request_session).run(_NAMES, {"names": []}).all() == []


@pytest.mark.postgres
def test_a_rollback_that_cannot_be_sent_leaves_the_connection_invalidated(request_session, db):
    """The server gone mid-transaction: the request's rollback does not raise over the error
    being answered, and the connection is discarded rather than handed back to the pool."""
    backend = UnitOfWork.of(request_session).run(select(func.pg_backend_pid()), {}).scalar()
    connection = request_session.connection_for_work()
    driver = connection.connection.dbapi_connection
    db.execute(select(func.pg_terminate_backend(backend)))
    request_session.rollback()
    assert connection.invalidated and driver.closed
    request_session.close()
