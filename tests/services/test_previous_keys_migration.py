"""Migration 0014 on a database made before it: a previous key still in its grace keeps
working until then, an expired or revoked one does not; down again, the latest replaced key
goes back on its credential's row."""
from __future__ import annotations

from datetime import timedelta

from alembic import command
from sqlalchemy import inspect, text

from app.database.engine import make_engine, utcnow
from app.database.migrate import alembic_config, upgrade
from app.services.tenancy import credentials, keys
from app.services.transactions import make_session_factory
from tests.conftest import TEST_PEPPER

BEFORE = "0013_tier_window_versions"


def _credential(connection, stored, name: str, previous_valid_until,
                revoked_at=None) -> tuple[str, str]:
    """A credential as release 0013 kept it, rotated once: its key and its previous key."""
    current, previous = keys.new_key(), keys.new_key()
    connection.execute(text(
        "INSERT INTO api_credentials (company_id, id, name, scopes, prefix, key_digest, "
        "previous_key_digest, previous_valid_until, revoked_at, created_at) VALUES "
        "('c1', :id, :id, 'company:read', :prefix, :digest, :previous, :until, :revoked, :now)"),
        {"id": name, "prefix": current[:16], "digest": keys.key_digest(TEST_PEPPER, current),
         "previous": keys.key_digest(TEST_PEPPER, previous), "until": stored(previous_valid_until),
         "revoked": stored(revoked_at), "now": stored(utcnow())})
    return current, previous


def test_previous_keys_in_their_grace_move_and_keep_working(fresh_database):
    upgrade(fresh_database, BEFORE)
    engine = make_engine(fresh_database)
    now = utcnow()

    def stored(moment):  # SQLite keeps naive UTC (app.database.engine.UtcDateTime)
        return moment.replace(tzinfo=None) if moment and engine.dialect.name == "sqlite" else moment

    with engine.begin() as connection:
        connection.execute(text("INSERT INTO companies (id, name, created_at) "
                                "VALUES ('c1', 'c1', :now)"), {"now": stored(now)})
        current, in_grace = _credential(connection, stored, "in-grace", now + timedelta(hours=1))
        _, expired = _credential(connection, stored, "expired", now - timedelta(seconds=1))
        _, revoked = _credential(connection, stored, "revoked", now + timedelta(hours=1),
                                 revoked_at=now)

    upgrade(fresh_database)
    session = make_session_factory(engine)()

    def holder(key):
        found = credentials.authenticate(session, key, pepper=TEST_PEPPER, now=utcnow())
        session.rollback()
        return found and found.credential_id

    assert [holder(key) for key in (in_grace, expired, revoked)] == ["in-grace", None, None]
    credentials.rotate_credential(session, "c1", "in-grace", grace_seconds=600,
                                             pepper=TEST_PEPPER, now=utcnow())
    session.commit()
    assert holder(in_grace) == "in-grace"  # the migrated key outlives the next rotation
    session.close()

    command.downgrade(alembic_config(fresh_database), BEFORE)
    with engine.connect() as connection:
        assert "api_credential_previous_keys" not in inspect(connection).get_table_names()
        previous = connection.scalar(text(
            "SELECT previous_key_digest FROM api_credentials WHERE id = 'in-grace'"))
    engine.dispose()
    assert previous == keys.key_digest(TEST_PEPPER, current)  # the latest replaced key
