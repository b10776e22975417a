"""Prebuilt statements run straight on the driver: the register's path.

`run(session, statement, params)` executes a Core statement built once (module level) in the
session's transaction. On PostgreSQL it compiles the statement once per parameter set and
hands the SQL to the psycopg2 cursor of the session's connection, skipping the execution
machinery SQLAlchemy wraps around every statement (result objects, type processing of
rows, the compiled cache's lookup): about a tenth of a checkout request's CPU. Elsewhere
(SQLite, executemany lists, statements with expanding IN) it is `Connection.execute`.

`defer(session, statement, params)` is for writes nothing waits on (no rows, no count, no
error a caller would catch): on PostgreSQL they travel in one string with the transaction's
next statement, so a hold's account, hold and event rows cost no round trips of their own.
Anything else the session runs (an ORM query or flush, a commit) sends them first; a rollback
drops them. Elsewhere they run at once.

What stays the same: bind parameters go through their types' processors; errors come out as
SQLAlchemy's exceptions (IntegrityError...) and a dropped connection is invalidated; the
engine's `before_cursor_execute` listeners see the statement. What differs: rows are named
tuples of the driver's values (PostgreSQL's timestamptz arrive aware, as UtcDateTime gives
them, though in the server's zone; every reader here converts), `.rowcount`, `.first()`,
`.one()`, `.all()`, `.scalar()` and iteration are what the result offers.
"""
from __future__ import annotations

import re
from collections import namedtuple

from sqlalchemy import event, exc
from sqlalchemy.orm import Session

_PREPARED: dict = {}
_DEFERRED = "deferred_writes"
_CONNECTION = "statements_connection"
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


class _Prepared:
    __slots__ = ("statement", "compiled", "sql", "processors", "row_types", "direct", "renamed")

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
        self.renamed: dict[int, str] = {}

    def values(self, params: dict) -> dict:
        values = self.compiled.construct_params(params)
        for name, process in self.processors:
            if name in values:
                values[name] = process(values[name])
        return values

    def sql_as(self, prefix: int) -> str:
        """The SQL with its parameters renamed apart, to share a string with others."""
        sql = self.renamed.get(prefix)
        if sql is None:
            sql = self.renamed[prefix] = _PARAMETER.sub(
                lambda name: f"%(d{prefix}_{name.group(1)})s", self.sql)
        return sql


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


def _connection(session: Session):
    """The session's connection for this transaction, kept while it lasts: asking the session
    for it again costs more than some statements take to run."""
    connection = session.info.get(_CONNECTION)
    if connection is None:
        connection = session.info[_CONNECTION] = session.connection()
    return connection


def defer(session: Session, statement, params: dict | list[dict]) -> None:
    """Write later, with the transaction's next statement (see the module's note)."""
    connection = _connection(session)
    if connection.dialect.name != "postgresql":
        connection.execute(statement, params)
        return
    rows = params if isinstance(params, list) else [params]
    pending = session.info.setdefault(_DEFERRED, [])
    for row in rows:
        prepared = _prepare(connection, statement, row)
        if not prepared.direct:
            send_deferred(session)
            connection.execute(statement, row)
        else:
            pending.append((prepared, prepared.values(row)))


def send_deferred(session: Session) -> None:
    """Send what is deferred now, in one round trip of its own."""
    if session.info.get(_DEFERRED):
        _send(session, _connection(session), None, None)


def run(session: Session, statement, params: dict | list | None = None):
    connection = _connection(session)
    if connection.dialect.name != "postgresql" or not isinstance(params, dict):
        send_deferred(session)
        return connection.execute(statement, params)
    prepared = _prepare(connection, statement, params)
    if not prepared.direct:
        send_deferred(session)
        return connection.execute(statement, params)
    return _send(session, connection, prepared, prepared.values(params))


def _send(session: Session, connection, prepared: _Prepared | None, values: dict | None):
    """The deferred writes and then `prepared` (if any), as one string: one round trip. Its
    rows and count are the last statement's."""
    pending = session.info.pop(_DEFERRED, None)
    if pending:
        parts = [*pending, *([(prepared, values)] if prepared is not None else [])]
        sql = ";\n".join(part.sql_as(index) for index, (part, _) in enumerate(parts))
        values = {f"d{index}_{name}": value for index, (_, given) in enumerate(parts)
                  for name, value in given.items()}
    else:
        sql = prepared.sql
    for listener in connection.engine.dispatch.before_cursor_execute:
        listener(connection, None, sql, values, None, False)

    dbapi_connection = connection.connection.dbapi_connection
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(sql, values)
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
        wrapped = exc.DBAPIError.instance(sql, values, error,
                                          connection.dialect.loaded_dbapi.Error,
                                          connection_invalidated=disconnected)
        if disconnected:
            connection.invalidate(wrapped)
        raise wrapped from error
    finally:
        cursor.close()


# Whatever else the session does sees the deferred writes done first.
@event.listens_for(Session, "do_orm_execute")
def _before_orm_statement(orm_execute_state) -> None:
    send_deferred(orm_execute_state.session)


@event.listens_for(Session, "before_flush")
def _before_flush(session: Session, flush_context, instances) -> None:
    send_deferred(session)


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    send_deferred(session)


@event.listens_for(Session, "after_transaction_end")
def _after_transaction(session: Session, transaction) -> None:
    if transaction.parent is None:  # committed (sent before) or rolled back: nothing stays
        session.info.pop(_DEFERRED, None)
        session.info.pop(_CONNECTION, None)
