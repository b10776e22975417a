"""Every timestamptz the driver reads (app/database/timestamptz.py) is the moment sent, in UTC, whatever
zone the session writes it in (offsets in hours, minutes and seconds: Moscow's +02:30:17 before
1919; local times in the year 10000 or BC), the unit of work's rows included."""
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import bindparam, func, select

from app.database.engine import UtcDateTime, utcnow
from app.database.timestamptz import utc_moment
from app.models import Company
from app.services.unit_of_work import UnitOfWork

ZONES = ["UTC", "Asia/Kathmandu", "Europe/Moscow", "America/St_Johns", "Africa/Monrovia"]
MOMENT = select(bindparam("moment", type_=UtcDateTime()).label("moment"))


def in_zone(zone: str):
    """The transaction's time zone, as SET LOCAL TIME ZONE sets it."""
    return select(func.set_config("TimeZone", zone, True))


@pytest.mark.postgres
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moment=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                           timezones=st.just(timezone.utc)),
       zone=st.sampled_from(ZONES))
def test_a_moment_reads_back_as_sent_in_utc(app, moment, zone):
    with app.extensions["engine"].connect() as connection:
        connection.execute(in_zone(zone))
        read = connection.execute(MOMENT, {"moment": moment}).scalar()
        assert read == moment and read.tzinfo is timezone.utc
        connection.rollback()


@pytest.mark.postgres
def test_the_unit_of_work_reads_a_time_column_in_utc_in_another_zone(app):
    companies = Company.__table__
    session = app.extensions["session_factory"]()
    try:
        work = UnitOfWork.of(session)
        work.run(in_zone("Asia/Kathmandu"))
        now = utcnow()
        work.defer(companies.insert(), {"id": "c-zone", "name": "Zone", "created_at": now})
        read = work.run(select(companies.c.created_at)
                        .where(companies.c.id == bindparam("id")), {"id": "c-zone"}).scalar()
        assert read == now and read.tzinfo is timezone.utc
    finally:
        session.rollback()
        session.close()


@pytest.mark.parametrize("shown, moment", [
    ("2026-11-26 17:28:24.5+00", datetime(2026, 11, 26, 17, 28, 24, 500000)),
    ("1900-01-01 00:00:00+02:30:17", datetime(1899, 12, 31, 21, 29, 43)),
    # Local times Python cannot hold: the year 10000 at Kathmandu, 1 BC at New York.
    ("10000-01-01 04:45:00+05:45", datetime(9999, 12, 31, 23, 0)),
    ("0001-12-31 19:00:00-05 BC", datetime(1, 1, 1, 0, 0)),
    ("infinity", datetime.max), ("-infinity", datetime.min),
])
def test_the_servers_text_is_read_as_the_utc_moment(shown, moment):
    read = utc_moment(shown)
    assert read == moment.replace(tzinfo=timezone.utc) and read.tzinfo is timezone.utc
