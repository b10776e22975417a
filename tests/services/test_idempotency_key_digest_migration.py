"""Migration 0025: the idempotency records' primary key becomes the company and a digest of
operation and key; a record kept from before is found by it afterwards, and the way down
brings the text key back."""
from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from app.database.engine import make_engine, utcnow
from app.database.migrate import alembic_config, upgrade
from app.models.idempotency import key_digest

REVISION, BEFORE = "0025_idempotency_key_digest", "0024_checkout_database_share"
OPERATION, KEY = "POST /v1/checkout/sessions", "ключ-0001"


def _key_columns(engine) -> list[str]:
    with engine.connect() as connection:
        return inspect(connection).get_pk_constraint("idempotency_records")["constrained_columns"]


def test_a_record_kept_from_before_is_found_by_its_digest(fresh_database):
    upgrade(fresh_database, BEFORE)
    engine = make_engine(fresh_database)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO companies (id, name, created_at)"
                                " VALUES ('c1', 'c1', :now)"), {"now": utcnow()})
        connection.execute(text(
            "INSERT INTO idempotency_records (company_id, operation, key, fingerprint,"
            " status_code, response_body, created_at)"
            " VALUES ('c1', :operation, :key, 'f', 201, '{}', :now)"),
            {"operation": OPERATION, "key": KEY, "now": utcnow()})

    upgrade(fresh_database, REVISION)
    assert _key_columns(engine) == ["company_id", "key_digest"]
    with engine.connect() as connection:
        found = connection.execute(text(
            "SELECT key, response_body FROM idempotency_records"
            " WHERE company_id = 'c1' AND key_digest = :digest"),
            {"digest": key_digest(OPERATION, KEY)}).all()
    assert [tuple(row) for row in found] == [(KEY, "{}")]

    command.downgrade(alembic_config(fresh_database), BEFORE)
    assert _key_columns(engine) == ["company_id", "operation", "key"]
    with engine.connect() as connection:
        assert connection.scalar(text("SELECT count(*) FROM idempotency_records")) == 1
    engine.dispose()
