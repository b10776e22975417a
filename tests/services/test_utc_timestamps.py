"""Every timestamptz the driver reads is the moment sent, in UTC, whatever the session's zone
writes it in (offsets in hours, minutes and seconds: Moscow's +02:30:17 before 1919), as the
driver's own caster reads it."""
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg2 import extensions

ZONES = ["UTC", "Asia/Kathmandu", "Europe/Moscow", "America/St_Johns", "Africa/Monrovia"]


@pytest.mark.postgres
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moment=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                           timezones=st.just(timezone.utc)),
       zone=st.sampled_from(ZONES))
def test_a_moment_reads_back_as_sent_in_utc(app, moment, zone):
    with app.extensions["engine"].connect() as connection:
        connection.exec_driver_sql(f"SET LOCAL TIME ZONE '{zone}'")
        cursor = connection.connection.dbapi_connection.cursor()
        cursor.execute("SELECT %s::timestamptz, (%s::timestamptz)::text", (moment, moment))
        read, text = cursor.fetchone()
        assert read == moment and read.tzinfo is timezone.utc
        assert read == extensions.PYDATETIMETZ(text, cursor)  # the driver's own reading
        connection.rollback()


@pytest.mark.postgres
def test_what_the_standard_library_cannot_read_goes_to_the_drivers_caster(app):
    with app.extensions["engine"].connect() as connection:
        cursor = connection.connection.dbapi_connection.cursor()
        cursor.execute("SELECT 'infinity'::timestamptz, '-infinity'::timestamptz")
        late, early = cursor.fetchone()
        assert (late.tzinfo, early.tzinfo) == (timezone.utc, timezone.utc)
        assert (late.year, early.year) == (9999, 1)  # the driver's own clamp
        connection.rollback()
