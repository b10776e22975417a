"""Migration 0029: the index the back office reads a company's latest deliveries by comes (and
goes on the way down)."""
from __future__ import annotations

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from app.database.engine import make_engine
from app.database.migrate import alembic_config, upgrade

REVISION = "0029_deliveries_by_company"
INDEX = "ix_webhook_deliveries_company_recent"


def _delivery_indexes(engine) -> dict[str, list[str]]:
    with engine.connect() as connection:
        return {index["name"]: index["column_names"]
                for index in inspect(connection).get_indexes("webhook_deliveries")}


def test_the_companys_latest_deliveries_get_their_index(fresh_database):
    before = ScriptDirectory.from_config(alembic_config(fresh_database)).get_revision(
        REVISION).down_revision
    upgrade(fresh_database, before)
    engine = make_engine(fresh_database)
    assert INDEX not in _delivery_indexes(engine)

    upgrade(fresh_database, REVISION)
    assert _delivery_indexes(engine)[INDEX] == ["company_id", "created_at", "id"]

    command.downgrade(alembic_config(fresh_database), before)
    assert INDEX not in _delivery_indexes(engine)
    engine.dispose()
