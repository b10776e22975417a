"""The register's unit of work: one transaction's connection, statements, deferred writes,
locked accounts and recorded events, written out in one place.

Why it exists: the register's path sends its statements through SQLAlchemy's Core execution
(`Connection.execute`, values bound by the driver), not the ORM's flush, and writes nothing
waits on are gathered until the transaction's next statement, so that a batch of rows goes as
one executemany. Everything off that path uses the ORM session as usual; this object shares
its transaction.

- `run(statement, params)` sends the deferred writes and then `statement`; its result is
  SQLAlchemy's (rows, `scalar()`, `rowcount`; times are aware UTC: app/database/engine.py's UtcDateTime).
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

Deferred writes run in the order queued, each as its own execution, just before the next
statement (or the commit): they fail there, and the transaction rolls back whole.
"""
from __future__ import annotations

from sqlalchemy.orm import Session

from app.services.rewards.locked_account import Account


class UnitOfWork:
    """What one transaction does on the register's path (see the module's note)."""

    def __init__(self, session: Session):
        self.session = session
        self.connection = session.connection_for_work()
        # PostgreSQL's statements do more in one (a data-modifying WITH): the callers choose.
        self.postgresql = self.connection.dialect.name == "postgresql"
        self.deferred: list = []  # (statement, params) until sent
        self.accounts: dict[tuple[str, str], Account] = {}
        self.events: list = []  # outbox.RecordedEvent, handed over once committed

    @classmethod
    def of(cls, session) -> UnitOfWork:
        """The unit of work of the session's current transaction, begun on first use (a
        WorkSession or a RequestSession: app/services/transactions.py)."""
        work = session.work
        if work is None:
            work = session.work = cls(session)
        return work

    def run(self, statement, params: dict | list | None = None):
        """`statement` now, after whatever is deferred: SQLAlchemy's result of it."""
        if self.deferred:
            self.send()
        return self.connection.execute(statement, params)

    def defer(self, statement, params: dict | list[dict]) -> None:
        """A write nothing waits on (a list of rows: one executemany for them all), sent
        before the transaction's next statement. A unique violation that means a Conflict is
        answered as one where it surfaces (app/services/errors.py: conflict_of_constraint)."""
        self.deferred.append((statement, params))

    def send(self) -> None:
        """What is deferred, now, in the order queued. Rows of the same statement queued one
        after another (with the same columns) go as one executemany."""
        pending, self.deferred = self.deferred, []
        execute = self.connection.execute
        for statement, rows in _batches(pending):
            execute(statement, rows[0] if len(rows) == 1 else rows)

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
        """A request's: write out what is left and send it; the connection's commit follows."""
        self.finish()


def _batches(pending: list) -> list:
    """The queued writes as (statement, rows), rows of one statement with the same columns
    queued one after another gathered; an empty list of rows is nothing to send."""
    batches: list = []
    for statement, params in pending:
        rows = params if isinstance(params, list) else [params]
        if not rows:
            continue
        if batches and batches[-1][0] is statement and batches[-1][1][-1].keys() == rows[0].keys():
            batches[-1][1].extend(rows)
        else:
            batches.append((statement, list(rows)))
    return batches
