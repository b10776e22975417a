"""when a program's tiers list last changed: the moment its wallet passes changed with it

A wallet pass shows its customer's tier (docs/api.md#wallet). A change of the tiers list moves
customers between tiers without writing their accounts, whose `updated_at` is otherwise the
pass's update tag; `programs.tiers_changed_at` is the other moment a pass may have changed at
(app.services.cards.passkit). Null until the list first changes: a nullable column, added
without a rewrite of the table.

Revision ID: 0021_program_tiers_changed_at
Revises: 0020_credential_columns_dropped
"""
import sqlalchemy as sa
from alembic import op

revision = "0021_program_tiers_changed_at"
down_revision = "0020_credential_columns_dropped"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("programs", sa.Column("tiers_changed_at", sa.DateTime(timezone=True),
                                        nullable=True))


def downgrade() -> None:
    op.drop_column("programs", "tiers_changed_at")
