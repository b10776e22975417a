"""The unit of work: prebuilt statements through SQLAlchemy's execution, every value bound by the
driver (rows by name, rowcount, errors, listeners); deferred writes are in place for its next
statement, rows of one insert in one execution, go with a flush or a commit, and go away with
a rollback; a locked account's changes are never lost, whenever they are made."""
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, event, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from app.database.engine import utcnow
from app.models import Company, LedgerEntry, RewardAccount
from app.services.customers import profiles
from app.services.rewards import ledger, verification
from app.services.unit_of_work import UnitOfWork

CARDS = "http://127.0.0.1:8000"  # where card links point

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


def run(session, statement, params=None):
    return UnitOfWork.of(session).run(statement, params)


def defer(session, statement, params):
    UnitOfWork.of(session).defer(statement, params)


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
        assert row.since == now and row.since.utcoffset() == timedelta(0)  # UTC on both
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
    session.flush()  # sends them for the ORM's reads
    assert _names(session) == ["Deux", "One", "Three"]


def test_deferred_rows_of_one_insert_go_in_one_execution_each_statement_alone(app, session):
    seen = []
    engine = app.extensions["engine"]

    def listener(conn, cursor, statement, parameters, *rest):
        if not statement.startswith("BEGIN"):  # SQLite's own BEGIN IMMEDIATE
            seen.append((statement, parameters))

    now = utcnow()
    event.listen(engine, "before_cursor_execute", listener)
    try:
        defer(session, _ADD, {"id": "c-1", "name": "One", "created_at": now})
        defer(session, _ADD, {"id": "c-2", "name": "O'Two", "created_at": now})
        assert run(session, _NAMED, {"name": "O'Two"}).scalar() == "c-2"
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    sent = [statement.split(None, 1)[0] for statement, _ in seen]
    assert sent == ["INSERT", "SELECT"]
    # The values travel as the driver's parameters, never in the statements' text.
    assert all("O'Two" not in statement and ";" not in statement for statement, _ in seen)
    assert "O'Two" in str(seen[0][1]) and "O'Two" in str(seen[1][1])


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
    defer(session, _ADD, {"id": "c-1", "name": "Again", "created_at": now})  # nothing yet
    with pytest.raises(IntegrityError):  # on both databases
        run(session, _NAMED, {"name": "One"})


# Accounts: one object per account and transaction, written out whenever it changed

@pytest.fixture
def customer_id(app, tenant):
    session = app.extensions["session_factory"]()
    made = profiles.enrol_customer(session, tenant.company_id, phone="+79120000001",
                                   first_name="Анна", public_base_url=CARDS, now=utcnow())
    session.commit()
    session.close()
    return made.customer.id


def _stored(app, company_id, customer_id):
    session = app.extensions["session_factory"]()
    try:
        account = session.get(RewardAccount, (company_id, customer_id))
        entries = session.scalar(select(func.count()).select_from(LedgerEntry).where(
            LedgerEntry.customer_id == customer_id))
        return account.available, entries, verification.verify(session, company_id)
    finally:
        session.close()


def test_a_change_after_the_account_was_written_out_is_written_too(app, tenant, customer_id):
    session = app.extensions["session_factory"]()
    now = utcnow()
    work = UnitOfWork.of(session)
    account = ledger.lock(work, tenant.company_id, customer_id, now)
    ledger.post(account, type="ADJUSTMENT", amount=500, now=now, basis="first")
    work.write_out()  # what an idempotent request does before completing its record
    session.flush()
    ledger.post(account, type="ADJUSTMENT", amount=700, now=now, basis="after the write-out")
    session.commit()
    session.close()
    assert _stored(app, tenant.company_id, customer_id) == (1200, 2, [])


def test_an_account_locked_twice_is_one_account(app, tenant, customer_id, session):
    now = utcnow()
    work = UnitOfWork.of(session)
    first = ledger.lock(work, tenant.company_id, customer_id, now)
    ledger.post(first, type="ADJUSTMENT", amount=300, now=now, basis="credit")
    again = ledger.lock(work, tenant.company_id, customer_id, now)
    assert again is first and again.available == 300


def test_a_rollback_forgets_the_locked_accounts(app, tenant, customer_id, session):
    now = utcnow()
    account = ledger.lock(UnitOfWork.of(session), tenant.company_id, customer_id, now)
    ledger.post(account, type="ADJUSTMENT", amount=300, now=now, basis="dropped")
    session.rollback()
    assert UnitOfWork.of(session).accounts == {}
    session.commit()
    assert _stored(app, tenant.company_id, customer_id) == (0, 0, [])


def test_in_lists_given_fixed_and_empty(app, session):
    now = utcnow()
    for number in range(3):
        run(session, _ADD, {"id": f"c-{number}", "name": f"N{number}", "created_at": now})
    listed = select(COMPANIES.c.name).where(
        COMPANIES.c.name.in_(bindparam("names", expanding=True))).order_by(COMPANIES.c.name)
    seen = []

    def listener(conn, cursor, statement, parameters, *rest):
        seen.append((statement, parameters))

    engine = app.extensions["engine"]
    event.listen(engine, "before_cursor_execute", listener)
    try:
        assert [r.name for r in run(session, listed, {"names": ["N2", "N0", "x'y"]})] == [
            "N0", "N2"]
        assert run(session, listed, {"names": []}).all() == []
        fixed = select(COMPANIES.c.name).where(COMPANIES.c.name.in_(["N1", "N2"]))
        assert sorted(r.name for r in run(session, fixed, {})) == ["N1", "N2"]
        nothing = select(COMPANIES.c.name).where(COMPANIES.c.name.in_([]))
        assert run(session, nothing, {}).all() == []
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert all("x'y" not in statement and "N1" not in statement for statement, _ in seen)
