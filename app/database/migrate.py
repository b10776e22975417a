"""Running the Alembic migrations from code (the CLI, the tests and `make run` use this)."""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "heads") -> None:
    command.upgrade(alembic_config(database_url), revision)


def migration_state(connection, database_url: str) -> tuple[list[str], list[str]]:
    """The revisions the database is at, and the heads of the migrations shipped with the code."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    current = MigrationContext.configure(connection).get_current_heads()
    heads = ScriptDirectory.from_config(alembic_config(database_url)).get_heads()
    return sorted(current), sorted(heads)
