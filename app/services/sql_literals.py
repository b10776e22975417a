"""The register's statements with their values written in, as psycopg2 would write them.

Why: psycopg2 fills `%s` on the client. For each value it finds an adapter by type, makes an
adapter object, looks up and calls its `prepare` and `getquoted` by name: about 10,000 machine
instructions a value, a seventh of a checkout's own CPU (docs/performance.md). The register's
values are a handful of types (and tuples of them: an IN list); for those this writes the very
text psycopg2 writes (tests/services/test_sql_literals.py compares them, value by value and
statement by statement, with psycopg2's own `mogrify` on a live connection). Anything else, and any text psycopg2 would
refuse (a NUL character), goes back to psycopg2 whole: `render` answers None.

Only on a connection whose server keeps standard conforming strings (a backslash is an
ordinary character in a '...' literal, PostgreSQL's default since 9.1) and speaks UTF-8:
there a quote doubled is the whole of a text's escaping. psycopg2 switches to E'...' literals
otherwise, and so do we, by leaving those connections to it.
"""
from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal


def writes_literals(dbapi_connection) -> bool:
    """Whether `render`'s text is psycopg2's on this connection."""
    return (dbapi_connection.encoding == "UTF8" and
            dbapi_connection.get_parameter_status("standard_conforming_strings") == "on")


def render(sql: str, values: list) -> str | None:
    """`sql` (with `%s` and `%%`, as psycopg2 takes it) with `values` written in; None when
    one of them is psycopg2's to write."""
    written = _literals(values)
    return None if written is None else sql % tuple(written)


def _literals(values) -> list | None:
    written = []
    for value in values:
        kind = type(value)
        if kind is str:
            if "\x00" in value:
                return None
            written.append("'" + value.replace("'", "''") + "'")
        elif kind is int:
            # psycopg2 puts a space before a negative number, so "-" after "-" is no comment
            written.append(str(value) if value >= 0 else " " + str(value))
        elif value is None:
            written.append("NULL")
        elif kind is datetime:
            written.append(("'%s'::timestamp" if value.tzinfo is None else "'%s'::timestamptz")
                           % value.isoformat())
        elif kind is bool:
            written.append("true" if value else "false")
        elif kind is date:
            written.append("'%s'::date" % value.isoformat())
        elif kind is Decimal and value.is_finite():
            text = str(value)
            written.append(" " + text if text[0] == "-" else text)
        elif kind is tuple and value:  # an IN list: psycopg2 writes its items in parentheses
            items = _literals(value)
            if items is None:
                return None
            written.append("(" + ", ".join(items) + ")")
        else:
            return None
    return written
