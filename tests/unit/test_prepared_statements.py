"""The unit of work fills the driver's parameters itself (app/services/unit_of_work.py): the
same values SQLAlchemy's construct_params and the types' processors give, for every way a
statement gets its values; what it cannot fill is SQLAlchemy's to fill or refuse."""
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, exc, insert, select, update
from sqlalchemy.dialects.postgresql import psycopg2 as pg

from app.db import UtcDateTime
from app.services.driver_statements import prepare as _prepare

DIALECT = pg.dialect()
THINGS = Table("things", MetaData(), Column("company_id", String), Column("id", String),
               Column("state", String), Column("amount", Integer), Column("at", UtcDateTime))
MOSCOW = timezone(timedelta(hours=3))
NOW = datetime(2026, 11, 26, 15, 0, tzinfo=MOSCOW)

FIND = select(THINGS.c.id).where(THINGS.c.company_id == bindparam("company"),
                                 THINGS.c.state == "OPEN", THINGS.c.at > bindparam("now"))
MOVE = (update(THINGS).where(THINGS.c.id == bindparam("b_id"), THINGS.c.state == bindparam("seen"))
        .values(state=bindparam("b_state"), at=bindparam("b_at")))
ADD = insert(THINGS)


def through_sqlalchemy(prepared, params: dict) -> dict:
    values = prepared.compiled.construct_params(params)
    processors = prepared.compiled._bind_processors
    return {name: processors[name](value) if name in processors else value
            for name, value in values.items()}


@pytest.mark.parametrize("statement, params", [
    (FIND, {"company": "c1", "now": NOW}),
    (FIND, {"company": "c1", "now": NOW, "state_1": "CLOSED"}),  # a fixed value given anew
    (MOVE, {"b_id": "t1", "seen": "OPEN", "b_state": "DONE", "b_at": NOW}),
    (ADD, {"company_id": "c1", "id": "t1", "state": "OPEN", "amount": 5, "at": NOW}),
    (ADD, {"company_id": "c1", "id": "t1", "state": None, "amount": None, "at": None}),
])
def test_the_values_are_sqlalchemys(statement, params):
    prepared = _prepare(DIALECT, statement, params)
    assert prepared.direct
    # repr: a moment's zone too, which == between datetimes does not compare
    assert repr(prepared.values(params)) == repr(through_sqlalchemy(prepared, params))


def test_moments_reach_the_driver_in_utc():
    prepared = _prepare(DIALECT, FIND, {"company": "c1", "now": NOW})
    sent = prepared.values({"company": "c1", "now": NOW})["now"]
    assert sent == NOW and sent.utcoffset() == timedelta(0)


def test_a_value_missing_is_refused_as_sqlalchemy_refuses_it():
    prepared = _prepare(DIALECT, FIND, {"company": "c1"})
    with pytest.raises(exc.InvalidRequestError, match="bind parameter 'now'"):
        prepared.values({"company": "c1"})


def test_the_sql_sent_names_its_values_in_order():
    params = {"b_id": "t1", "seen": "OPEN", "b_state": "DONE", "b_at": NOW}
    prepared = _prepare(DIALECT, MOVE, params)
    assert prepared.positional.count("%s") == len(prepared.order) == 4
    assert "%(" not in prepared.positional
    values = prepared.values(params)
    assert [values[name] for name in prepared.order] == ["DONE", NOW, "t1", "OPEN"]
