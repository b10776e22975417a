"""The register's unit of work: one transaction's connection, statements, deferred writes,
locked accounts and recorded events, written out in one place.

Why it exists: on the register's path our own Python is the bottleneck (docs/performance.md),
so statements are built once and sent straight to the driver, and writes nothing waits on
travel with the transaction's next statement instead of costing round trips of their own.
Everything off that path uses the ORM session as usual; this object shares its transaction.

- `run(statement, params)` sends the deferred writes and then `statement`; rows come back as
  named tuples of the driver's values (times are UTC: app/utc_timestamps.py).
- `defer(statement, params)` queues a write that no caller waits on (no rows, no count, no
  error it would catch: a unique violation that means a Conflict is registered as one,
  `app/services/errors.py`).
- `ledger.lock` puts an account here (once per transaction: a second lock of the same account
  is the same object); `ledger.post`, `reserve`, `unreserve` change it in memory.
- `write_out()` queues every account changed since it was last written, with its new entries.
  `commit()` (a request's) and `finish()` (a job's, before the ORM's commit) write out what
  changed (a change is never lost) and send what is queued, an idempotent request's record
  completion with it; the session keeps the recorded events for the after-commit hand-over to
  the delivery queue.

The one difference between the databases: PostgreSQL takes the queued writes and the next
statement as one string (one round trip); SQLite's driver runs one statement per call, so
there they go one by one just before it. Either way they run at the same moment in the
transaction, and fail there.

A request's transaction on PostgreSQL goes further: it is one "in text"
(app/services/text_transactions.py), whose BEGIN travels in the unit of work's first string
and whose COMMIT in that of its last writes (`commit()`). The statements themselves go
straight to the driver (app/services/driver_statements.py).
"""
from __future__ import annotations

from sqlalchemy.orm import Session

from app.services import sql_literals
from app.services.driver_statements import Prepared, execute, execute_text, prepare
from app.services.rewards.account import Account
from app.services.text_transactions import is_open, owes_begin


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
            return self._through_sqlalchemy(statement, params)
        prepared = prepare(self.connection.dialect, statement, params)
        values = prepared.values(params) if prepared.direct else None
        if values is None:
            return self._through_sqlalchemy(statement, params)
        return self._send(self._parts_to_join(), prepared, values)

    def defer(self, statement, params: dict | list[dict]) -> None:
        """A write nothing waits on (a list of rows: one statement for them all), sent with
        the transaction's next statement. A unique violation that means a Conflict is
        answered as one where it surfaces (app/services/errors.py: conflict_of_constraint)."""
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
        parts = self._parts_to_join()
        if parts or is_open(self.dbapi):
            self._send(parts, closing="COMMIT")

    def _through_sqlalchemy(self, statement, params):
        """`statement` by SQLAlchemy's own execution (SQLite's, or one it renders when sent),
        after what is deferred and the BEGIN a transaction in text owes."""
        self.send()
        self._begin()
        return self.connection.execute(statement, params)

    def _parts_to_join(self) -> list:
        """The deferred writes to join to the next string; if one is SQLAlchemy's to render,
        all of them go now, through it."""
        parts = self._parts()
        if parts is None:
            self.send()
            return []
        return parts

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
                prepared = prepare(dialect, statement, row)
                if not prepared.direct or prepared.expanding:  # a list's emptiness unchecked
                    return None
                parts.append((prepared, row))
        return parts

    def _send(self, parts: list | None, prepared: Prepared | None = None,
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
        return execute(self.connection, sql, values, prepared, self.literals)
