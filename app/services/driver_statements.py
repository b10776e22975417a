"""Statements sent straight to psycopg2 on a SQLAlchemy connection, as the register's unit of
work sends them (app/services/unit_of_work.py): each compiled once for the dialect, its values
filled as SQLAlchemy's construct_params and the types' processors would fill them, the text
written with the values in (app/services/sql_literals.py) where psycopg2's own would be the
same, its rows as named tuples, the engine's statement listeners and SQLAlchemy's errors
(a lost connection invalidated) as `Connection.execute` gives them.

A statement whose values SQLAlchemy works out as it sends it (a literal_execute bind, values
collected while compiling, a missing value, an empty IN list) is not `direct` or gets None
from `values`: its caller sends it through SQLAlchemy instead.
"""
from __future__ import annotations

import re
from collections import namedtuple

from sqlalchemy import exc

from app.services import sql_literals

_PREPARED: dict = {}
_PARAMETER = re.compile(r"%\((\w+)\)s")
_MOST_PREPARED = 2000  # statements are built once, so this is never reached; a guard only


class Rows:
    __slots__ = ("rows", "rowcount")

    def __init__(self, rows: list, rowcount: int):
        self.rows, self.rowcount = rows, rowcount

    def first(self):
        return self.rows[0] if self.rows else None

    def one(self):
        if len(self.rows) != 1:
            raise (exc.NoResultFound if not self.rows else exc.MultipleResultsFound)(
                f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def all(self) -> list:
        return self.rows

    def scalar(self):
        return self.rows[0][0] if self.rows else None

    def __iter__(self):
        return iter(self.rows)


class Prepared:
    """A statement compiled once for PostgreSQL, with its parameters' type processors."""

    __slots__ = ("statement", "compiled", "sql", "binds", "fixed", "row_type", "direct",
                 "positional", "order", "expanding")

    def __init__(self, statement, compiled, dialect):
        # Holding the statement keeps its id from being reused while it is cached.
        self.statement = statement
        self.compiled = compiled
        # An expanding IN list (`column.in_(bindparam(name, expanding=True))`) goes as one
        # tuple, which psycopg2 (and sql_literals) write as ('a', 'b'); an empty list goes
        # through SQLAlchemy, which writes what an empty IN means (`values` answers None).
        sql, self.expanding = compiled.string, set()
        for bind in compiled.post_compile_params:
            name = compiled.bind_names[bind]
            if bind.expanding and not bind.literal_execute:
                sql = sql.replace(f"(__[POSTCOMPILE_{name}])", f"%({name})s")
                self.expanding.add(name)
        self.sql = sql
        # Sent as compiled only when nothing else is rendered at execution (literal_execute)
        # and SQLAlchemy collected no values while compiling (its _collected_params, merged
        # into construct_params'): those go through SQLAlchemy.
        self.direct = not (compiled.literal_execute_params or compiled.positional
                           or "POSTCOMPILE" in self.sql
                           or getattr(compiled, "_collected_params", None))
        # SQLAlchemy's construct_params, worked out once per statement: each bind's name in
        # the SQL, the key a caller passes it by, its own name and its type's processor; and
        # the values the statement itself fixes (`column == "OPEN"`), already processed.
        escaped = compiled.escaped_bind_names or {}
        self.binds: list = []
        self.fixed: dict = {}
        for bind, name in compiled.bind_names.items():
            sql_name = escaped.get(name, name)
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            self.binds.append((sql_name, bind.key, name, process))
            if not bind.required and not bind.callable:
                self.fixed[sql_name] = (
                    _in_list(bind.value, process) if sql_name in self.expanding
                    else process(bind.value) if process else bind.value)
        if any(value is None for name, value in self.fixed.items() if name in self.expanding):
            self.direct = False  # a fixed empty list: SQLAlchemy writes what it means
        self.row_type = None  # its rows' named tuple, made from the first answer's columns
        # The SQL as it is sent: `%s` for each parameter, and their names in the order they
        # appear (psycopg2 fills a list of values for less than a dict of them by name; a
        # statement shares a string with others in this form too).
        self.order = tuple(_PARAMETER.findall(self.sql))
        self.positional = _PARAMETER.sub("%s", self.sql)

    def values(self, params: dict) -> dict | None:
        """The driver's parameters, as SQLAlchemy's construct_params and processors give;
        None when SQLAlchemy must send the statement (an empty IN list)."""
        values = {}
        fixed = self.fixed
        for sql_name, key, name, process in self.binds:
            if key in params:
                value = params[key]
            elif name in params:
                value = params[name]
            elif sql_name in fixed:
                values[sql_name] = fixed[sql_name]
                continue
            else:  # missing, or worked out when sent: SQLAlchemy's own rules and errors
                return self._by_sqlalchemy(params)
            if sql_name in self.expanding:
                value = _in_list(value, process)
                if value is None:
                    return None
            elif process is not None:
                value = process(value)
            values[sql_name] = value
        return values

    def _by_sqlalchemy(self, params: dict) -> dict | None:
        if self.expanding:
            return None
        values = self.compiled.construct_params(params)
        for sql_name, _key, _name, process in self.binds:
            if process is not None and sql_name in values:
                values[sql_name] = process(values[sql_name])
        return values


def _in_list(value, process) -> tuple | None:
    """An IN list's items as the driver takes them, in a tuple; None for an empty list."""
    if not value:
        return None
    return tuple(map(process, value) if process is not None else value)


def prepare(dialect, statement, params: dict) -> Prepared:
    """`statement` compiled for the dialect once (an insert once per set of columns given)."""
    keys = tuple(params) if statement.is_insert else None
    key = (id(statement), keys)
    prepared = _PREPARED.get(key)
    if prepared is None or prepared.statement is not statement:
        if len(_PREPARED) >= _MOST_PREPARED:
            _PREPARED.clear()
        compiled = statement.compile(dialect=dialect,
                                     column_keys=list(keys) if keys is not None else None)
        prepared = _PREPARED[key] = Prepared(statement, compiled, dialect)
    return prepared


def execute_text(connection, sql: str) -> None:
    """A statement without values or rows (BEGIN, COMMIT, ROLLBACK), as the others are sent."""
    execute(connection, sql, None)


def execute(connection, sql: str, values: list | None, prepared: Prepared | None = None,
            literals: bool = False) -> Rows:
    """`sql` on the driver, seen by the engine's listeners; rows as `prepared`'s named tuples."""
    # The engine's statement listeners (the round-trip counts of the tests) see it too;
    # SQLAlchemy's own flag says whether there are any, as its execute asks it.
    if connection.engine._has_events:
        for listener in connection.engine.dispatch.before_cursor_execute:
            listener(connection, None, sql, values, None, False)

    dbapi_connection = connection.connection.dbapi_connection
    cursor = dbapi_connection.cursor()
    try:
        written = sql_literals.render(sql, values) if literals else None
        if written is None:
            cursor.execute(sql, values)
        else:
            cursor.execute(written)
        rows = []
        if prepared is not None and cursor.description is not None:
            # The statement's columns are its SQL's, the same every time it is sent.
            row_type = prepared.row_type
            if row_type is None:
                row_type = prepared.row_type = namedtuple(
                    "Row", [column[0] for column in cursor.description], rename=True)
            rows = [row_type._make(row) for row in cursor.fetchall()]
        return Rows(rows, cursor.rowcount)
    except connection.dialect.loaded_dbapi.Error as error:
        disconnected = connection.dialect.is_disconnect(error, dbapi_connection, cursor)
        wrapped = exc.DBAPIError.instance(sql, values, error,
                                          connection.dialect.loaded_dbapi.Error,
                                          hide_parameters=connection.engine.hide_parameters,
                                          connection_invalidated=disconnected)
        if disconnected:
            connection.invalidate(wrapped)
        raise wrapped from error
    finally:
        cursor.close()
