"""Times on the wire: RFC 3339 in UTC with Z, to the millisecond, whatever the year."""
from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from app.wire import format_timestamp


def test_early_years_keep_four_digits():
    assert format_timestamp(datetime(1, 1, 1, tzinfo=timezone.utc)) == "0001-01-01T00:00:00.000Z"
    assert format_timestamp(datetime(999, 5, 6, 7, 8, 9, 123456)) == "0999-05-06T07:08:09.123Z"


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                    timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=3))])))
def test_a_shown_moment_reads_back_as_itself_to_the_millisecond(moment):
    shown = format_timestamp(moment)
    assert len(shown) == 24 and shown.endswith("Z")
    back = datetime.fromisoformat(shown.replace("Z", "+00:00"))
    assert back == moment.replace(microsecond=moment.microsecond // 1000 * 1000)
