"""PostgreSQL's timestamptz read by the driver as an aware datetime in UTC, whatever the
database session's time zone: a typecaster registered on each connection through psycopg2's
type adaptation (`extensions.new_type`, `register_type`), nothing set on the server.

Why not the driver's own caster: it gives the moment in the session's zone, which behind
PgBouncer in transaction pooling is the database's own (no startup options, no session
settings), say Asia/Kathmandu; and a moment late in 9999 in UTC is in the year 10000 there (one
early in year 1 is BC west of Greenwich), a local time Python cannot hold, so the driver's
caster fails on it. This one reads the server's ISO text (DateStyle ISO, the server's default)
with the standard library and answers in UTC.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from psycopg2 import extensions

_TIMESTAMPTZ, _TIMESTAMPTZ_ARRAY = 1184, 1185  # the types' oids, fixed in PostgreSQL's catalog
# The Gregorian calendar repeats every 400 years, which are exactly this many days.
_GREGORIAN_CYCLE_DAYS = 146097
_INFINITY = {"infinity": datetime.max.replace(tzinfo=timezone.utc),
             "-infinity": datetime.min.replace(tzinfo=timezone.utc)}


def utc_moment(text: str | None, _cursor=None) -> datetime | None:
    """The moment the server's text ("2026-11-26 17:28:24.5+05:45") names, in UTC."""
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text).astimezone(timezone.utc)
    except ValueError:
        if text in _INFINITY:  # the latest and the earliest moment, as the driver's own clamp
            return _INFINITY[text]
        return _beyond_python(text)


def _beyond_python(text: str) -> datetime:
    """A local time outside Python's years 1-9999 ("10000-01-01 04:45:00+05:45",
    "0001-12-31 19:00:00-05 BC"): read 400 years nearer, where the calendar is the same, and
    moved back by as many days once in UTC."""
    bc = text.endswith(" BC")
    year, rest = (text[:-3] if bc else text).split("-", 1)
    year = 1 - int(year) if bc else int(year)  # 1 BC is year 0
    cycles = 1 if year < 1 else -1
    nearer = datetime.fromisoformat(f"{year + 400 * cycles:04d}-{rest}")
    return nearer.astimezone(timezone.utc) - timedelta(days=_GREGORIAN_CYCLE_DAYS * cycles)


UTC_TIMESTAMPTZ = extensions.new_type((_TIMESTAMPTZ,), "UTC_TIMESTAMPTZ", utc_moment)
UTC_TIMESTAMPTZ_ARRAY = extensions.new_array_type((_TIMESTAMPTZ_ARRAY,), "UTC_TIMESTAMPTZ[]",
                                                  UTC_TIMESTAMPTZ)


def read_timestamps_as_utc(dbapi_connection, _record=None) -> None:
    """The engine's connect hook: this connection's timestamptz values come back in UTC."""
    extensions.register_type(UTC_TIMESTAMPTZ, dbapi_connection)
    extensions.register_type(UTC_TIMESTAMPTZ_ARRAY, dbapi_connection)
