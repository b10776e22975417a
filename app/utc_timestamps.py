"""Every timestamptz PostgreSQL sends is read as an aware UTC datetime, whatever the session's
time zone.

The server writes a timestamptz in the session's zone, and that zone is the database's own
behind PgBouncer in transaction pooling (no startup options, no session settings), say
Asia/Kathmandu. psycopg2 keeps the offset it was sent; the driver's caster is replaced on
each connection (client side: nothing is set on the server) so rows read straight from the
driver (the unit of work) carry UTC as the ORM's do. A moment late in 9999 in UTC is in the
year 10000 east of Greenwich (and one early in year 1 is BC west of it): Python cannot hold
that local time, so such a text is worked out by hand.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from psycopg2 import extensions

_TIMESTAMPTZ, _TIMESTAMPTZ_ARRAY = 1184, 1185
_driver_cast = extensions.PYDATETIMETZ
# ISO DateStyle, psycopg2's own: "10000-01-01 04:45:00.5+05:45", "0001-12-31 19:00:00-05 BC".
_SHOWN = re.compile(r"(\d+)-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?"
                    r"([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?( BC)?")
_EPOCH = datetime(1, 1, 1, tzinfo=timezone.utc)


def _days_before(year: int) -> int:
    """Days from 0001-01-01 to 1 January of `year` (proleptic Gregorian, any year)."""
    past = year - 1
    return past * 365 + past // 4 - past // 100 + past // 400


def _day_of_year(year: int, month: int, day: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    before = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)[month - 1]
    return before + (1 if leap and month > 2 else 0) + day - 1


def _beyond_python(text: str) -> datetime:
    """A moment whose local time is outside Python's years 1-9999, in UTC."""
    match = _SHOWN.fullmatch(text)
    if match is None:
        raise ValueError(f"unreadable timestamptz {text!r}")
    (year, month, day, hour, minute, second, fraction,
     sign, off_hours, off_minutes, off_seconds, bc) = match.groups()
    year = 1 - int(year) if bc else int(year)  # 1 BC is year 0
    offset = int(off_hours) * 3600 + int(off_minutes or 0) * 60 + int(off_seconds or 0)
    local = ((_days_before(year) + _day_of_year(year, int(month), int(day))) * 86400
             + int(hour) * 3600 + int(minute) * 60 + int(second))
    micros = int((fraction or "0").ljust(6, "0")[:6])
    utc = local - (offset if sign == "+" else -offset)
    return _EPOCH + timedelta(seconds=utc, microseconds=micros)


def _as_utc(text: str | None, cursor) -> datetime | None:
    if text is None:
        return None
    # The standard library reads the server's ISO text ("2026-11-26 17:28:24.5+00") in C, for
    # less than half of what the driver's caster and a conversion cost (a checkout reads some
    # 130 moments); the driver's caster reads whatever else it is sent ("infinity", BC).
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        return moment if moment.tzinfo is timezone.utc else moment.astimezone(timezone.utc)
    try:
        return _driver_cast(text, cursor).astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return _beyond_python(text)


UTC_TIMESTAMPTZ = extensions.new_type((_TIMESTAMPTZ,), "UTC_TIMESTAMPTZ", _as_utc)
UTC_TIMESTAMPTZ_ARRAY = extensions.new_array_type((_TIMESTAMPTZ_ARRAY,), "UTC_TIMESTAMPTZ[]",
                                                  UTC_TIMESTAMPTZ)


def read_timestamps_as_utc(dbapi_connection, _record=None) -> None:
    """The engine's connect hook: this connection's timestamptz values come back in UTC."""
    extensions.register_type(UTC_TIMESTAMPTZ, dbapi_connection)
    extensions.register_type(UTC_TIMESTAMPTZ_ARRAY, dbapi_connection)
