"""The unit of work writes the register's values into its SQL itself
(app/services/sql_literals.py): the very text psycopg2's mogrify gives on the same connection,
value by value and statement by statement; what psycopg2 would refuse or write otherwise is
left to psycopg2; and the server reads every text back as it was."""
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from psycopg2.extensions import ISQLQuote, adapters, register_adapter
from sqlalchemy import bindparam, insert, select

from app.db import utcnow
from app.models import Company
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
VALUES = st.one_of(VALUES, st.lists(VALUES, min_size=1, max_size=4).map(tuple))  # IN lists
EXAMPLES = settings(max_examples=300, deadline=None,
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


@EXAMPLES
@given(value=VALUES)
def test_each_value_is_written_as_psycopg2_writes_it(dbapi, value):
    assert sql_literals.render("%s", [value]) == psycopg2s(dbapi, "%s", [value])


@EXAMPLES
@given(values=st.lists(VALUES, max_size=8))
def test_a_statement_is_written_as_psycopg2_writes_it(dbapi, values):
    sql = "SELECT " + ", ".join(["%s"] * len(values)) + " WHERE 'x' LIKE '%%'"
    assert sql_literals.render(sql, values) == psycopg2s(dbapi, sql, values)


@EXAMPLES
@given(text=TEXTS)
def test_the_server_reads_every_text_back_as_it_was(dbapi, text):
    with dbapi.cursor() as cursor:
        cursor.execute(sql_literals.render("SELECT %s, %s::text", [text, text]))
        assert cursor.fetchone() == (text, text)


@pytest.mark.parametrize("value", [
    "NUL \x00 inside", 1.5, b"bytes", Decimal("NaN"), Decimal("-Infinity"), {"a": 1}, [1, 2],
    datetime.now().time(), (), ("a", 1.5)])
def test_what_psycopg2_would_refuse_or_write_otherwise_is_left_to_it(value):
    assert sql_literals.render("SELECT %s", ["plain", value]) is None


def test_a_server_without_standard_strings_is_left_to_psycopg2(db):
    db.connection().exec_driver_sql("SET LOCAL standard_conforming_strings = off")
    assert not sql_literals.writes_literals(db.connection().connection.dbapi_connection)
    assert not UnitOfWork.of(db).literals


NAMED = select(Company.id, Company.name).where(Company.name == bindparam("name"))


@pytest.fixture
def psycopg2_adapts_no_text():
    """psycopg2's adapter for text replaced by one that fails, for the test's length."""
    def refuse(value):
        raise AssertionError(f"psycopg2 was asked to adapt {value!r}")

    kept = adapters[(str, ISQLQuote)]
    register_adapter(str, refuse)
    yield
    adapters[(str, ISQLQuote)] = kept


def test_the_unit_of_work_writes_the_values_itself(db, psycopg2_adapts_no_text):
    work = UnitOfWork.of(db)
    assert work.literals
    work.run(insert(Company), {"id": "c-1", "name": "O'Brien \\ «Сыр»", "created_at": utcnow()})
    assert tuple(work.run(NAMED, {"name": "O'Brien \\ «Сыр»"}).one()) == ("c-1", "O'Brien \\ «Сыр»")
    with pytest.raises(AssertionError, match="adapt"):  # the fixture does bite
        with db.connection().connection.dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT %s", ["x"])


def test_a_text_with_nul_is_left_to_psycopg2s_refusal(db):
    with pytest.raises(ValueError, match="NUL"):  # psycopg2's own refusal, as before
        UnitOfWork.of(db).run(NAMED, {"name": "a\x00b"})
