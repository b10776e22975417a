"""Which rows keep a key to `companies` on PostgreSQL (migration 0009): the register's rows
reach their company through a parent; the migration goes both ways."""
import pytest
from alembic import command
from sqlalchemy import create_engine, text

from app.database.migrate import alembic_config

pytestmark = pytest.mark.postgres

REGISTER_ROWS = {"checkout_sessions", "quotes", "holds", "sales", "returns", "ledger_entries",
                 "outbox_events", "idempotency_records", "catalog_items"}


def _referencing_companies(connection) -> set[str]:
    return set(connection.scalars(text(
        "SELECT conrelid::regclass::text FROM pg_constraint "
        "WHERE contype = 'f' AND confrelid = 'companies'::regclass")))


def _parents(connection, table: str) -> set[str]:
    return set(connection.scalars(text(
        "SELECT confrelid::regclass::text FROM pg_constraint "
        "WHERE contype = 'f' AND conrelid = CAST(:table AS regclass)"), {"table": table}))


def test_register_rows_reach_their_company_through_a_parent(app):
    with app.extensions["engine"].connect() as connection:
        referencing = _referencing_companies(connection)
        assert not referencing & REGISTER_ROWS
        assert {"customers", "stores", "api_credentials", "terminals"} <= referencing
        for table, parent in (("checkout_sessions", "customers"), ("quotes", "checkout_sessions"),
                              ("holds", "customers"), ("sales", "customers"),
                              ("returns", "sales"), ("ledger_entries", "customers"),
                              ("catalog_items", "stores")):
            assert parent in _parents(connection, table), table


def test_the_migration_goes_down_and_up_again(fresh_database):
    config = alembic_config(fresh_database)
    command.upgrade(config, "heads")
    engine = create_engine(fresh_database)
    try:
        command.downgrade(config, "0008_customer_names")
        with engine.connect() as connection:
            assert REGISTER_ROWS <= _referencing_companies(connection)
        command.upgrade(config, "heads")
        with engine.connect() as connection:
            assert not _referencing_companies(connection) & REGISTER_ROWS
    finally:
        engine.dispose()
