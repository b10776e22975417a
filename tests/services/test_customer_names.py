"""The directory's name rows (CustomerName): written with the customer, filled in by the
migration for customers enrolled before it, and what the name search reads. Every test of the
suite also ends by checking that no customer's row has drifted (tests/conftest.py)."""
from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import delete, inspect, select, update

from app.database.engine import make_engine, utcnow
from app.database.migrate import alembic_config, upgrade
from app.models import Company, Customer, CustomerName
from app.services.cards import identifiers
from app.services.customers import profiles
from tests.conftest import ON_POSTGRES
from tests.customer_names import names_out_of_step

CARDS = "http://127.0.0.1:8000"  # where card links point

BEFORE = "0007_gift_card_misses"


def _enrol(app, company_id, phone, first_name, last_name=None):
    session = app.extensions["session_factory"]()
    made = profiles.enrol_customer(session, company_id, phone=phone, first_name=first_name,
                                   last_name=last_name, public_base_url=CARDS, now=utcnow())
    session.commit()
    session.close()
    return made.customer


def _names(db, company_id):
    db.expire_all()
    return {row.card_number: (row.full_name, row.created_at) for row in db.scalars(
        select(CustomerName).where(CustomerName.company_id == company_id))}


def test_enrolment_writes_the_lower_cased_first_and_last_name_and_the_time(app, tenant, db):
    ivan = _enrol(app, tenant.company_id, "+79120000001", "Иван", "ПЕТРОВ-Водкин")
    oleg = _enrol(app, tenant.company_id, "+79120000002", "Олег")
    john = _enrol(app, tenant.company_id, "+79120000003", "John", "Smith")
    assert _names(db, tenant.company_id) == {
        ivan.card_number: ("иван петров-водкин", ivan.created_at),
        oleg.card_number: ("олег ", oleg.created_at),
        john.card_number: ("john smith", john.created_at),
    }


def test_the_name_search_reads_the_name_rows(app, tenant, db):
    """So a row out of step with its customer would answer wrongly: the check the suite ends with
    is what keeps them in step."""
    ivan = _enrol(app, tenant.company_id, "+79120000001", "Иван", "Петров")

    def found(query):
        session = app.extensions["session_factory"]()
        page, total = profiles.directory(session, tenant.company_id, query=query, now=utcnow())
        session.close()
        return [c.customer.id for c in page], total

    assert found("петров") == ([ivan.id], 1)
    where = (CustomerName.company_id == tenant.company_id,
             CustomerName.card_number == ivan.card_number)
    db.execute(update(CustomerName).where(*where).values(full_name="someone else"))
    db.commit()
    assert found("петров") == ([], 0) and found("else") == ([ivan.id], 1)
    assert names_out_of_step(db.connection()) == [(ivan.id, "Иван", "Петров")]
    db.execute(delete(CustomerName).where(*where))
    profiles.record_names(db, tenant.company_id)  # the company's missing rows, written again
    db.commit()
    assert found("петров") == ([ivan.id], 1)


def test_recording_names_of_no_customers_writes_nothing(app, tenant, db):
    _enrol(app, tenant.company_id, "+79120000001", "Иван")
    profiles.record_names(db, tenant.company_id, [])
    profiles.record_names(db, tenant.company_id)  # every customer has its row already
    db.commit()
    assert len(_names(db, tenant.company_id)) == 1


def test_the_migration_fills_in_the_names_of_customers_enrolled_before_it(fresh_database):
    upgrade(fresh_database, BEFORE)
    engine = make_engine(fresh_database)
    now = utcnow()
    people = {"2000000000015": ("Мария", "ИВАНОВА"), "2000000000022": ("Олег", None)}
    with engine.begin() as connection:
        connection.execute(Company.__table__.insert(), {"id": "company", "name": "Old Shop",
                                                        "created_at": now})
        connection.execute(Customer.__table__.insert(), [
            {"company_id": "company", "id": f"c-{i}", "phone": f"+7912000000{i}",
             "first_name": first, "last_name": last, "card_number": card_number,
             "card_token": identifiers.new_card_token(), "created_at": now}
            for i, (card_number, (first, last)) in enumerate(people.items())])

    upgrade(fresh_database)
    with engine.connect() as connection:
        rows = connection.execute(select(CustomerName.card_number, CustomerName.full_name,
                                         CustomerName.created_at)).all()
        assert sorted(rows) == [("2000000000015", "мария иванова", now),
                                ("2000000000022", "олег ", now)]
        assert names_out_of_step(connection) == []
        indexes = {index["name"] for index in inspect(connection).get_indexes("customer_names")}
        old = {index["name"] for index in inspect(connection).get_indexes("customers")}
    if ON_POSTGRES:
        assert "ix_customer_names_full_name_trgm" in indexes
        assert "ix_customers_name_trgm" not in old

    command.downgrade(alembic_config(fresh_database), BEFORE)
    with engine.connect() as connection:
        assert "customer_names" not in inspect(connection).get_table_names()
        old = {index["name"] for index in inspect(connection).get_indexes("customers")}
    assert ("ix_customers_name_trgm" in old) == ON_POSTGRES
    engine.dispose()


FIRST = ["Анна", "Иван", "Мария", "Олег", "John"]
LAST = ["Иванова", "Петров", None, "Smith", "Анисимов", "Ли"]


@pytest.mark.parametrize("walk_per_match", [0, profiles.WALK_PER_MATCH, 10 ** 9])
def test_a_name_page_is_its_slice_of_the_enrolment_order_by_walk_or_by_the_matches(
        app, tenant, monkeypatch, walk_per_match):
    """0 always takes the page from the matches, 10**9 always from the walk, the default either."""
    monkeypatch.setattr(profiles, "WALK_PER_MATCH", walk_per_match)
    enrolled = [_enrol(app, tenant.company_id, f"+791200000{i:02d}", FIRST[i % 5], LAST[i % 6])
                for i in range(30)]
    order = sorted(enrolled, key=lambda c: (c.created_at, c.card_number))
    with app.extensions["session_factory"]() as session:
        for query in ["а", "АН", "иван", "ов ", "smith", "ли", "олег и", "zzz"]:
            expected = [c.id for c in order
                        if query.lower() in f"{c.first_name} {c.last_name or ''}".lower()]
            for offset, limit in [(0, 20), (0, 1), (2, 3), (max(len(expected) - 1, 0), 5), (40, 5)]:
                page, total = profiles.directory(session, tenant.company_id, query=query,
                                                 offset=offset, limit=limit, now=utcnow())
                session.rollback()
                assert ([c.customer.id for c in page], total) == (
                    expected[offset:offset + limit], len(expected)), (query, offset, limit)


@pytest.mark.parametrize("walk_per_match", [0, 10 ** 9])
def test_customers_enrolled_in_the_same_instant_are_listed_by_card_number_every_way(
        app, tenant, monkeypatch, walk_per_match):
    monkeypatch.setattr(profiles, "WALK_PER_MATCH", walk_per_match)
    now = utcnow()
    with app.extensions["session_factory"]() as session:
        made = [profiles.enrol_customer(session, tenant.company_id, phone=f"+7912000000{i}",
                                        first_name="Анна", public_base_url=CARDS,
                                        now=now).customer for i in range(4)]
        session.commit()
        expected = [c.id for c in sorted(made, key=lambda c: c.card_number)]
        for query in [None, "анна", "912"]:
            for offset in range(4):
                page, total = profiles.directory(session, tenant.company_id, query=query,
                                                 offset=offset, limit=1, now=now)
                session.rollback()
                assert ([c.customer.id for c in page], total) == (expected[offset:offset + 1], 4)
