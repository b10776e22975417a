"""A transaction "in text": on PostgreSQL a request's transaction whose BEGIN travels in the
text of its first statement and whose COMMIT in that of its last writes, psycopg2 in
autocommit meanwhile so that it sends neither (two round trips fewer a request;
docs/decisions.md, "The register's path"). `RequestSession` (app/services/sessions.py)
begins and ends one; the unit of work writes its BEGIN and COMMIT into its strings.

Whether a BEGIN is owed is libpq's own account of the connection (idle: no transaction open on
the server), read without a round trip, not a flag of ours.
"""
from __future__ import annotations

from psycopg2.extensions import TRANSACTION_STATUS_IDLE

from app.services.driver_statements import execute_text


def is_open(dbapi_connection) -> bool:
    """Whether the server has a transaction open on this connection (libpq's status)."""
    return dbapi_connection.get_transaction_status() != TRANSACTION_STATUS_IDLE


def owes_begin(dbapi_connection) -> bool:
    """Whether the connection's transaction is one in text (its driver in autocommit) whose
    BEGIN has not been sent yet."""
    return dbapi_connection.autocommit and not is_open(dbapi_connection)


def end_in_text(connection, dbapi_connection, verb: str) -> None:
    """COMMIT or ROLLBACK, alone, of a transaction in text that is open on the server."""
    if is_open(dbapi_connection):
        execute_text(connection, verb)
