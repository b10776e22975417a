"""every key a rotation replaces keeps its own grace (docs/api.md#keys)

A credential kept one previous digest on its row, so a second rotation ended the first
replaced key's grace at once. Replaced keys now live in `api_credential_previous_keys`, each
with its own expiry (at most 10 live per credential), looked up by digest as the current key.
The previous digests still in their grace move there; revoked credentials' do not.

The old columns `previous_key_digest` and `previous_valid_until` (and their index) stay, no
longer read or written: the release before this one selects them in every request's key
lookup, and during a rolling deploy it runs against this schema. A later migration drops
them once no such release can be running.

Revision ID: 0014_credential_previous_keys
Revises: 0013_tier_window_versions
"""
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = "0014_credential_previous_keys"
down_revision = "0013_tier_window_versions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_credential_previous_keys",
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("credential_id", sa.String(length=36), nullable=False),
        sa.Column("sequence", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("key_digest", sa.String(length=64), nullable=False),
        sa.Column("valid_until", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["company_id", "credential_id"], ["api_credentials.company_id", "api_credentials.id"],
            name=op.f("fk_api_credential_previous_keys_company_id_credential_id_api_credentials")),
        sa.PrimaryKeyConstraint("company_id", "credential_id", "sequence",
                                name=op.f("pk_api_credential_previous_keys")),
    )
    op.create_index("ix_api_credential_previous_keys_key_digest", "api_credential_previous_keys",
                    ["key_digest"])
    now = datetime.now(timezone.utc)
    if op.get_bind().dialect.name == "sqlite":
        now = now.replace(tzinfo=None)  # stored naive UTC there (app.database.engine.UtcDateTime)
    op.get_bind().execute(sa.text(
        "INSERT INTO api_credential_previous_keys "
        "(company_id, credential_id, sequence, key_digest, valid_until) "
        "SELECT company_id, id, 1, previous_key_digest, previous_valid_until FROM api_credentials "
        "WHERE previous_key_digest IS NOT NULL AND previous_valid_until > :now "
        "AND revoked_at IS NULL"), {"now": now})


def downgrade() -> None:
    # The latest replaced key in its grace goes back on its credential's row; the older
    # ones end, as they did before this revision.
    op.execute(
        "UPDATE api_credentials SET "
        "previous_key_digest = (SELECT p.key_digest FROM api_credential_previous_keys p "
        "WHERE p.company_id = api_credentials.company_id "
        "AND p.credential_id = api_credentials.id ORDER BY p.sequence DESC LIMIT 1), "
        "previous_valid_until = (SELECT p.valid_until FROM api_credential_previous_keys p "
        "WHERE p.company_id = api_credentials.company_id "
        "AND p.credential_id = api_credentials.id ORDER BY p.sequence DESC LIMIT 1) "
        "WHERE EXISTS (SELECT 1 FROM api_credential_previous_keys p "
        "WHERE p.company_id = api_credentials.company_id AND p.credential_id = api_credentials.id)")
    op.drop_index("ix_api_credential_previous_keys_key_digest",
                  table_name="api_credential_previous_keys")
    op.drop_table("api_credential_previous_keys")
