"""a change of the tier window recounts spends lazily (docs/api.md#tiers)

Programs gain `tier_window_version`, moved by every change of `tierWindowDays`; reward accounts
gain `spend_window_version`, the version their spend was counted for, with an index that the
periodic job follows to the accounts still behind. Every existing spend was counted over the
program's window in force (migration 0012 and the recount a change made), so both start at 0.

Revision ID: 0013_tier_window_versions
Revises: 0012_program_tiers_campaigns
"""
import sqlalchemy as sa
from alembic import op

revision = "0013_tier_window_versions"
down_revision = "0012_program_tiers_campaigns"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("programs") as batch:
        batch.add_column(sa.Column("tier_window_version", sa.Integer(), nullable=False,
                                   server_default="0"))
    with op.batch_alter_table("reward_accounts") as batch:
        batch.add_column(sa.Column("spend_window_version", sa.Integer(), nullable=False,
                                   server_default="0"))
    op.create_index("ix_reward_accounts_spend_window", "reward_accounts",
                    ["company_id", "spend_window_version"])


def downgrade() -> None:
    op.drop_index("ix_reward_accounts_spend_window", table_name="reward_accounts")
    with op.batch_alter_table("reward_accounts") as batch:
        batch.drop_column("spend_window_version")
    with op.batch_alter_table("programs") as batch:
        batch.drop_column("tier_window_version")
