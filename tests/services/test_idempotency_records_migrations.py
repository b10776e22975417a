"""Migrations 0025 and 0026: the idempotency records' primary key becomes the company and a
digest of operation and key, and their answers are kept compressed. A record kept from before
is found by its digest afterwards; the way down brings the text key back, and each compressed
answer back as text."""
from __future__ import annotations

import zlib

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


def _one_record(database: str, revision: str, **columns):
    """A database at `revision` with one answered record of company c1, written in the columns
    that revision has."""
    upgrade(database, revision)
    engine = make_engine(database)
    row = {"company_id": "c1", "operation": OPERATION, "key": KEY, "fingerprint": "f",
           "status_code": 201, "created_at": utcnow(), **columns}
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO companies (id, name, created_at)"
                                " VALUES ('c1', 'c1', :now)"), {"now": utcnow()})
        connection.execute(text(f"INSERT INTO idempotency_records ({', '.join(row)})"
                                f" VALUES ({', '.join(':' + name for name in row)})"), row)
    return engine


def test_a_record_kept_from_before_is_found_by_its_digest(fresh_database):
    engine = _one_record(fresh_database, BEFORE, response_body="{}")

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


def test_a_compressed_answer_goes_back_to_text_on_the_way_down(fresh_database):
    answer = '{"id": "s-1", "state": "OPEN", "note": "ответ"}'
    engine = _one_record(fresh_database, "0026_idempotency_answers_zlib",
                         key_digest=key_digest(OPERATION, KEY),
                         answer=zlib.compress(answer.encode("utf-8")))

    command.downgrade(alembic_config(fresh_database), REVISION)
    with engine.connect() as connection:
        assert connection.scalar(text("SELECT response_body FROM idempotency_records")) == answer
        assert "answer" not in {column["name"] for column in
                                inspect(connection).get_columns("idempotency_records")}
    engine.dispose()
