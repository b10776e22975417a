"""Prebuilt statements run straight on the driver: the register's path.

`run(session, statement, params)` executes a Core statement built once (module level) in the
session's transaction. On PostgreSQL it compiles the statement once per parameter set and
hands the SQL to the psycopg2 cursor of the session's connection, skipping the execution
machinery SQLAlchemy wraps around every statement (result objects, type processing of
rows, the compiled cache's lookup): about a tenth of a checkout request's CPU. Elsewhere
(SQLite, executemany lists, statements with expanding IN) it is `Connection.execute`.

What stays the same: bind parameters go through their types' processors; errors come out as
SQLAlchemy's exceptions (IntegrityError...) and a dropped connection is invalidated; the
engine's `before_cursor_execute` listeners see the statement. What differs: rows are named
tuples of the driver's values (PostgreSQL's timestamptz arrive aware, as UtcDateTime gives
them, though in the server's zone; every reader here converts), `.rowcount`, `.first()`,
`.one()`, `.all()`, `.scalar()` and iteration are what the result offers.
"""
from __future__ import annotations

from collections import namedtuple

from sqlalchemy import exc
from sqlalchemy.orm import Session

_PREPARED: dict = {}
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


class _Prepared:
    __slots__ = ("statement", "compiled", "sql", "processors", "row_types", "direct")

    def __init__(self, statement, compiled):
        # Holding the statement keeps its id from being reused while it is cached.
        self.statement = statement
        self.compiled = compiled
        self.sql = compiled.string
        self.direct = not (compiled.literal_execute_params or compiled.positional
                           or "POSTCOMPILE" in self.sql)
        escaped = compiled.escaped_bind_names or {}
        self.processors = [(escaped.get(name, name), process)
                           for name, process in compiled._bind_processors.items()
                           if callable(process)]
        self.row_types: dict = {}


def _prepare(connection, statement, params: dict) -> _Prepared:
    keys = tuple(params) if statement.is_insert else None
    key = (id(statement), connection.dialect.name, keys)
    prepared = _PREPARED.get(key)
    if prepared is None or prepared.statement is not statement:
        if len(_PREPARED) >= _MOST_PREPARED:
            _PREPARED.clear()
        compiled = statement.compile(dialect=connection.dialect,
                                     column_keys=list(keys) if keys is not None else None)
        prepared = _PREPARED[key] = _Prepared(statement, compiled)
    return prepared


def run(session: Session, statement, params: dict | list | None = None):
    connection = session.connection()
    if connection.dialect.name != "postgresql" or not isinstance(params, dict):
        return connection.execute(statement, params)
    prepared = _prepare(connection, statement, params)
    if not prepared.direct:
        return connection.execute(statement, params)

    values = prepared.compiled.construct_params(params)
    for name, process in prepared.processors:
        if name in values:
            values[name] = process(values[name])
    listeners = connection.engine.dispatch.before_cursor_execute
    for listener in listeners:
        listener(connection, None, prepared.sql, values, None, False)

    dbapi_connection = connection.connection.dbapi_connection
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(prepared.sql, values)
        rows = []
        if cursor.description is not None:
            names = tuple(column[0] for column in cursor.description)
            row_type = prepared.row_types.get(names)
            if row_type is None:
                row_type = prepared.row_types[names] = namedtuple("Row", names, rename=True)
            rows = [row_type._make(row) for row in cursor.fetchall()]
        return Rows(rows, cursor.rowcount)
    except connection.dialect.loaded_dbapi.Error as error:
        disconnected = connection.dialect.is_disconnect(error, dbapi_connection, cursor)
        wrapped = exc.DBAPIError.instance(prepared.sql, values, error,
                                          connection.dialect.loaded_dbapi.Error,
                                          connection_invalidated=disconnected)
        if disconnected:
            connection.invalidate(wrapped)
        raise wrapped from error
    finally:
        cursor.close()
