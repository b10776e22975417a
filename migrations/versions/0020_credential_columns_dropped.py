"""the credential's old one-previous-key columns dropped

Migration 0014 moved replaced keys to `api_credential_previous_keys` and left
`previous_key_digest` and `previous_valid_until` (and their index) on `api_credentials`, because
the release before it read them on every request and could run beside 0014's schema during a
rolling deploy. No release since reads or writes them, and the release that runs beside this
schema is 0019's, which does not either.

The downgrade adds them back empty: 0014's own downgrade fills them from the table of
previous keys.

Revision ID: 0020_credential_columns_dropped
Revises: 0019_lots_in_spending_order
"""
import sqlalchemy as sa
from alembic import op

revision = "0020_credential_columns_dropped"
down_revision = "0019_lots_in_spending_order"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Not a batch on SQLite: that copies the table, and the previous keys' foreign keys to it
    # refuse the copy's drop. SQLite (3.35 and later) drops a column itself, as PostgreSQL does.
    op.drop_index("ix_api_credentials_previous_key_digest", table_name="api_credentials")
    op.drop_column("api_credentials", "previous_valid_until")
    op.drop_column("api_credentials", "previous_key_digest")


def downgrade() -> None:
    op.add_column("api_credentials",
                  sa.Column("previous_key_digest", sa.String(length=64), nullable=True))
    op.add_column("api_credentials",
                  sa.Column("previous_valid_until", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_api_credentials_previous_key_digest", "api_credentials",
                    ["previous_key_digest"])
