"""The register's unit of work: one transaction's connection, statements, deferred writes,
locked accounts and recorded events, written out in one place.

Why it exists: on the register's path our own Python is the bottleneck (docs/performance.md),
so statements are built once and sent straight to the driver, and writes nothing waits on
travel with the transaction's next statement instead of costing round trips of their own.
Everything off that path uses the ORM session as usual; this object shares its transaction.

- `run(statement, params)` sends the deferred writes and then `statement`; rows come back as
  named tuples of the driver's values (times are UTC: app/utc_timestamps.py).
- `defer(statement, params)` queues a write that no caller waits on (no rows, no count, no
  error it would catch).
- `ledger.lock` puts an account here (once per transaction: a second lock of the same account
  is the same object); `ledger.post`, `reserve`, `unreserve` change it in memory.
- `write_out()` queues every account changed since it was last written, with its new entries.
  Idempotent requests write out before completing their record, so all of it goes in that
  statement's round trip; `WorkSession.commit` writes out whatever changed after that (a
  change is never lost), sends what is queued, commits, and keeps the recorded events for
  the after-commit hand-over to the delivery queue.

The one difference between the databases: PostgreSQL takes the queued writes and the next
statement as one string (one round trip); SQLite's driver runs one statement per call, so
there they go one by one just before it. Either way they run at the same moment in the
transaction, and fail there.

A request's transaction on PostgreSQL goes further (`RequestSession`, app/services/sessions.py):
its driver connection is in autocommit, so psycopg2 sends no BEGIN or COMMIT of its own, and
the transaction's BEGIN travels in the text of its first statement and its COMMIT in that of
its last writes (`commit()`), two round trips fewer a request. Whether a BEGIN is owed is
libpq's own account of the connection (idle: no transaction open), not a flag of ours.
"""
from __future__ import annotations

import re
from collections import namedtuple

from psycopg2.extensions import TRANSACTION_STATUS_IDLE
from sqlalchemy import exc
from sqlalchemy.orm import Session

from app.services import sql_literals
from app.services.rewards.account import Account

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


class _Prepared:
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


def _prepare(dialect, statement, params: dict) -> _Prepared:
    keys = tuple(params) if statement.is_insert else None
    key = (id(statement), keys)
    prepared = _PREPARED.get(key)
    if prepared is None or prepared.statement is not statement:
        if len(_PREPARED) >= _MOST_PREPARED:
            _PREPARED.clear()
        compiled = statement.compile(dialect=dialect,
                                     column_keys=list(keys) if keys is not None else None)
        prepared = _PREPARED[key] = _Prepared(statement, compiled, dialect)
    return prepared


def _rows(params: dict | list[dict]) -> list[dict]:
    return params if isinstance(params, list) else [params]


class UnitOfWork:
    """What one transaction does on the register's path (see the module's note)."""

    def __init__(self, session: Session):
        self.session = session
        self.connection = session.connection_for_work()
        self.postgresql = self.connection.dialect.name == "postgresql"
        # The driver's connection: fixed for the transaction (a broken one ends it).
        self.dbapi = self.connection.connection.dbapi_connection
        # Values written into the SQL here rather than by psycopg2 (app/services/sql_literals.py)
        self.literals = self.postgresql and sql_literals.writes_literals(self.dbapi)
        self.deferred: list = []  # (statement, params) until sent
        self.accounts: dict[tuple[str, str], Account] = {}
        self.events: list = []  # outbox.RecordedEvent, handed over once committed

    @classmethod
    def of(cls, session) -> UnitOfWork:
        """The unit of work of the session's current transaction, begun on first use (a
        WorkSession or a RequestSession: app/services/sessions.py)."""
        work = session.work
        if work is None:
            work = session.work = cls(session)
        return work

    def run(self, statement, params: dict | list | None = None):
        """`statement` now, after whatever is deferred: its rows and count."""
        if not self.postgresql or not isinstance(params, dict):
            self.send()
            return self.connection.execute(statement, params)
        prepared = _prepare(self.connection.dialect, statement, params)
        values = prepared.values(params) if prepared.direct else None
        if values is None:
            self.send()
            return self.connection.execute(statement, params)
        parts = self._parts()
        if parts is None:  # a deferred write SQLAlchemy renders goes through it first
            self.send()
            parts = []
        return self._send(parts, prepared, values)

    def defer(self, statement, params: dict | list[dict]) -> None:
        """A write nothing waits on (a list of rows: one statement for them all), sent with
        the transaction's next statement."""
        self.deferred.append((statement, params))

    def send(self) -> None:
        """What is deferred, now."""
        if not self.deferred:
            return
        parts = self._parts() if self.postgresql else None
        if parts is not None:
            self._send(parts)
            return
        self._begin()
        pending, self.deferred = self.deferred, []
        for statement, params in pending:
            self.connection.execute(statement, params)

    def write_out(self) -> None:
        """Queue every account changed since it was last written, with its new entries."""
        for account in self.accounts.values():
            for statement, params in account.writes():
                self.defer(statement, params)

    def finish(self) -> None:
        """Before commit: write out what is left and send it."""
        self.write_out()
        self.send()

    def commit(self) -> None:
        """Write out what is left and send it; a transaction in text (module's note) commits
        in the same round trip. The connection's own commit follows either way."""
        self.write_out()
        if not (self.postgresql and self.dbapi.autocommit):
            self.send()
            return
        parts = self._parts()
        if parts is None:  # a write SQLAlchemy renders: sent first, the COMMIT after it
            self.send()
            parts = []
        if parts or self.dbapi.get_transaction_status() != TRANSACTION_STATUS_IDLE:
            self._send(parts, closing="COMMIT")

    def _begin(self) -> None:
        """The BEGIN a transaction in text owes, alone: before a statement the unit of work
        does not send itself (SQLAlchemy's own execution, the ORM's)."""
        if self.postgresql and owes_begin(self.dbapi):
            execute_text(self.connection, "BEGIN")

    def _parts(self) -> list | None:
        """The deferred writes, each row's statement prepared; None if one of them is
        SQLAlchemy's to render (an expanding list): those go through its execution."""
        parts = []
        dialect = self.connection.dialect
        for statement, params in self.deferred:
            for row in _rows(params):
                prepared = _prepare(dialect, statement, row)
                if not prepared.direct or prepared.expanding:  # a list's emptiness unchecked
                    return None
                parts.append((prepared, row))
        return parts

    def _send(self, parts: list | None, prepared: _Prepared | None = None,
              values: dict | None = None, closing: str = ""):
        """PostgreSQL: the deferred writes (`parts`) and then `prepared` (if any) as one
        string, one round trip, after the BEGIN a transaction in text owes and before
        `closing` (its COMMIT). Its rows and count are the last statement's."""
        if parts:
            parts = [(part, part.values(row)) for part, row in parts]
            self.deferred = []
            if prepared is not None:
                parts.append((prepared, values))
            sql = ";\n".join(part.positional for part, _ in parts)
            values = [given[name] for part, given in parts for name in part.order]
        elif prepared is not None:
            sql = prepared.positional
            values = [values[name] for name in prepared.order]
        else:
            sql, values = "", []
        if owes_begin(self.dbapi):
            sql = "BEGIN;\n" + sql
        if closing:
            sql = f"{sql};\n{closing}" if sql else closing
        return _execute(self.connection, sql, values, prepared, self.literals)


def owes_begin(dbapi_connection) -> bool:
    """Whether the connection's transaction is one in text (its driver in autocommit) whose
    BEGIN has not been sent yet: libpq knows whether one is open, without a round trip."""
    return (dbapi_connection.autocommit
            and dbapi_connection.get_transaction_status() == TRANSACTION_STATUS_IDLE)


def end_in_text(connection, dbapi_connection, verb: str) -> None:
    """COMMIT or ROLLBACK, alone, of a transaction in text that is open on the server."""
    if dbapi_connection.get_transaction_status() != TRANSACTION_STATUS_IDLE:
        execute_text(connection, verb)


def execute_text(connection, sql: str) -> None:
    """A statement without values or rows (BEGIN, COMMIT, ROLLBACK), as the others are sent."""
    _execute(connection, sql, None, None)


def _execute(connection, sql: str, values: list | None, prepared: _Prepared | None,
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
