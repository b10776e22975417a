"""sales a register made while it could not reach the service, sent later

A sale sent afterwards has no checkout session and no quote: both columns of `sales` become
nullable. Such a sale keeps its register (terminal, store, cashier) on its own row, where an
online sale reaches them through its session; nullable columns, added without a rewrite of
the table. Programs gain `offline_sale_window_days` (default 7), how old such a sale may be.

Revision ID: 0022_offline_sales
Revises: 0021_program_tiers_changed_at
"""
import sqlalchemy as sa
from alembic import op

revision = "0022_offline_sales"
down_revision = "0021_program_tiers_changed_at"
branch_labels = None
depends_on = None

_REGISTER = ("terminal_id", "store_id", "cashier_id")


def upgrade() -> None:
    with op.batch_alter_table("programs") as batch:
        batch.add_column(sa.Column("offline_sale_window_days", sa.Integer(), nullable=False,
                                   server_default="7"))
    with op.batch_alter_table("sales") as batch:
        batch.alter_column("checkout_session_id", existing_type=sa.String(36), nullable=True)
        batch.alter_column("quote_id", existing_type=sa.String(36), nullable=True)
        for name in _REGISTER:
            batch.add_column(sa.Column(name, sa.String(36), nullable=True))


def downgrade() -> None:
    # Fails while an offline sale is kept: it has no session for the column to name.
    with op.batch_alter_table("sales") as batch:
        for name in _REGISTER:
            batch.drop_column(name)
        batch.alter_column("quote_id", existing_type=sa.String(36), nullable=False)
        batch.alter_column("checkout_session_id", existing_type=sa.String(36), nullable=False)
    with op.batch_alter_table("programs") as batch:
        batch.drop_column("offline_sale_window_days")
