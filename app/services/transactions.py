"""The sessions a unit of work lives in: a job's `WorkSession` (the ORM's session, whose flush
and commit send the unit of work's writes first) and a request's `RequestSession` (a pooled
connection that makes the ORM's session only when something uses it).
"""
from __future__ import annotations

from sqlalchemy import Engine, exc
from sqlalchemy.orm import Session, sessionmaker

from app.services.unit_of_work import UnitOfWork


class WorkSession(Session):
    """The session of a request or a job, and of its unit of work. `flush` and `commit` send
    the unit of work's writes (accounts written out first) before the ORM's own; a commit
    keeps the events recorded in `committed_events` for the after-commit hand-over
    (app.operations.delivery_queue.hand_over_events); a rollback or close forgets the unit of work.
    ORM reads see the unit of work's writes once they are sent: at its next statement, a
    flush or the commit."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.work: UnitOfWork | None = None
        self.committed_events: list = []

    def flush(self, objects=None) -> None:
        if self.work is not None:
            self.work.finish()
        super().flush(objects)

    def commit(self) -> None:
        work = self.work
        if work is not None:
            work.finish()
        super().commit()
        self.work = None
        if work is not None:
            self.committed_events.extend(work.events)

    def rollback(self) -> None:
        self.work = None
        super().rollback()

    def close(self) -> None:
        self.work = None
        super().close()

    def connection_for_work(self):
        """The connection a unit of work sends its statements on."""
        return self.connection()

    def take_committed_events(self) -> list:
        """The events committed since the last call, for the delivery queue."""
        events, self.committed_events = self.committed_events, []
        return events


class RequestSession:
    """A request's transaction: a pooled connection, the unit of work on it, and the ORM
    session only once something asks for it.

    Why: making, beginning, committing and closing SQLAlchemy's Session costs about 0.1 ms of
    CPU a request (docs/performance.md), and the register's requests send every statement
    through the unit of work, so they never need it. A back-office view, or the key's touch
    once a minute, reaches the ORM through this object as through a session (attributes it
    does not have are the session's); the session is then bound to the request's connection
    and joins its transaction, so the unit of work's statements and the ORM's commit or roll
    back together. `request_session()` hands this out."""

    def __init__(self, factory: sessionmaker[WorkSession]):
        self._factory = factory
        self._connection = None
        self._orm: WorkSession | None = None
        self._work: UnitOfWork | None = None
        self._committed_events: list = []

    def connection(self):
        """The request's connection, in a transaction begun here (the ORM session, if made,
        joins it rather than beginning its own). After a commit the next use begins anew."""
        connection = self._connection
        if connection is None:
            connection = self._connection = self._factory.kw["bind"].connect()
        if not connection.in_transaction():
            connection.begin()
        return connection

    connection_for_work = connection  # what a unit of work sends its statements on

    def in_transaction(self) -> bool:
        return ((self._connection is not None and self._connection.in_transaction())
                or (self._orm is not None and self._orm.in_transaction()))

    @property
    def orm(self) -> WorkSession:
        if self._orm is None:
            self._orm = self._factory(bind=self.connection(), join_transaction_mode="rollback_only")
            self._orm.work, self._work = self._work, None
        return self._orm

    def __getattr__(self, name: str):
        return getattr(self.orm, name)

    @property
    def work(self) -> UnitOfWork | None:
        return self._orm.work if self._orm is not None else self._work

    @work.setter
    def work(self, work: UnitOfWork | None) -> None:
        if self._orm is not None:
            self._orm.work = work
        else:
            self._work = work

    # What the ORM has to flush: nothing while no session is made (none is made to ask).
    @property
    def new(self):
        return self._orm.new if self._orm is not None else ()

    @property
    def dirty(self):
        return self._orm.dirty if self._orm is not None else ()

    @property
    def deleted(self):
        return self._orm.deleted if self._orm is not None else ()

    def flush(self) -> None:
        if self._orm is not None:
            self._orm.flush()
        elif self._work is not None:
            self._work.finish()

    def commit(self) -> None:
        work = self._work
        if self._orm is not None:
            # Its writes and the unit of work's are sent; the transaction is the connection's.
            self._orm.commit()
        elif work is not None:
            work.commit()
            self._work = None
        if self._connection is not None:
            self._connection.commit()
        if work is not None:  # its events are the delivery queue's once committed, not before
            self._committed_events.extend(work.events)

    def rollback(self) -> None:
        self._work = None
        try:
            if self._orm is not None:
                self._orm.rollback()  # rolls the connection's transaction back too
            if self._connection is not None:
                self._connection.rollback()
        except exc.DBAPIError as error:
            # The server gone: SQLAlchemy has invalidated the connection (the pool discards
            # it, and the server ended the transaction); the error being answered stands.
            if not error.connection_invalidated:
                raise

    def close(self) -> None:
        self._work = None
        if self._orm is not None:
            self._orm.close()
        if self._connection is not None:
            self._connection.close()  # rolls back a transaction a failed commit left open
            self._connection = None

    def take_committed_events(self) -> list:
        events, self._committed_events = self._committed_events, []
        if self._orm is not None:
            events.extend(self._orm.take_committed_events())
        return events


def make_session_factory(engine: Engine) -> sessionmaker[WorkSession]:
    return sessionmaker(engine, class_=WorkSession, expire_on_commit=False, autoflush=False)
