"""The unit of work writes the register's values into its SQL itself
(app/services/sql_literals.py): the very text psycopg2's mogrify gives on the same connection,
value by value and statement by statement; what psycopg2 would refuse or write otherwise is
left to psycopg2; and the server reads every text back as it was."""
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from app.services import sql_literals
from app.services.unit_of_work import UnitOfWork

pytestmark = pytest.mark.postgres

TEXTS = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)))
ZONES = st.sampled_from([timezone.utc, timezone(timedelta(hours=3)),
                         timezone(timedelta(hours=-9, minutes=-30))])
VALUES = st.one_of(
    TEXTS, st.sampled_from(["'", "''", "\\", "\\'", "--", "%s", "%%", "Сыр «Российский»"]),
    st.integers(), st.integers(-2 ** 63, 2 ** 63), st.none(), st.booleans(),
    st.datetimes(timezones=ZONES), st.datetimes(), st.dates(),
    st.decimals(allow_nan=False, allow_infinity=False))
ONCE_PER_TEST = settings(max_examples=300, deadline=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def dbapi(app):
    connection = app.extensions["engine"].raw_connection()
    yield connection.dbapi_connection
    connection.rollback()
    connection.close()


def psycopg2s(dbapi, sql: str, values: list) -> str:
    with dbapi.cursor() as cursor:
        return cursor.mogrify(sql, values).decode()


def test_the_suites_connections_take_literals(dbapi):
    assert sql_literals.writes_literals(dbapi)


@ONCE_PER_TEST
@given(value=VALUES)
def test_each_value_is_written_as_psycopg2_writes_it(dbapi, value):
    assert sql_literals.render("%s", [value]) == psycopg2s(dbapi, "%s", [value])


@ONCE_PER_TEST
@given(values=st.lists(VALUES, max_size=8))
def test_a_statement_is_written_as_psycopg2_writes_it(dbapi, values):
    sql = "SELECT " + ", ".join(["%s"] * len(values)) + " WHERE 'x' LIKE '%%'"
    assert sql_literals.render(sql, values) == psycopg2s(dbapi, sql, values)


@ONCE_PER_TEST
@given(text=TEXTS)
def test_the_server_reads_every_text_back_as_it_was(dbapi, text):
    with dbapi.cursor() as cursor:
        cursor.execute(sql_literals.render("SELECT %s, %s::text", [text, text]))
        assert cursor.fetchone() == (text, text)


@pytest.mark.parametrize("value", [
    "NUL \x00 inside", 1.5, b"bytes", Decimal("NaN"), Decimal("-Infinity"), {"a": 1}, [1, 2],
    datetime.now().time()])
def test_what_psycopg2_would_refuse_or_write_otherwise_is_left_to_it(value):
    assert sql_literals.render("SELECT %s", ["plain", value]) is None


def test_a_server_without_standard_strings_is_left_to_psycopg2(dbapi):
    with dbapi.cursor() as cursor:
        cursor.execute("SET standard_conforming_strings = off")
    assert not sql_literals.writes_literals(dbapi)
    # psycopg2 itself writes E'...' there from its connection's start; ours is not that text
    assert sql_literals.render("%s", ["a\\b"]) == "'a\\b'"


def test_the_unit_of_work_writes_values_and_leaves_nul_to_psycopg2(app, db):
    from sqlalchemy import bindparam, select

    from app.models import Company

    work = UnitOfWork.of(db)
    assert work.literals
    named = select(Company.id).where(Company.name == bindparam("name"))
    assert work.run(named, {"name": "O'Brien \\ «Сыр»"}).all() == []
    with pytest.raises(ValueError, match="NUL"):  # psycopg2's own refusal, as before
        work.run(named, {"name": "a\x00b"})
