"""the wallet push sweep reads only the accounts changed since its last run

`reward_accounts (updated_at)` makes "changed since" a range scan; `sweep_marks` keeps how far
the sweep has read (one row per sweep, a table of no company: a reference table under Citus).
The index is built CONCURRENTLY on PostgreSQL: the registers keep writing while it is built.
It leads with `updated_at`, not `company_id`: the sweep reads every company, and a plain
index need not lead with the company (docs/decisions.md, the wallet card).

Revision ID: 0018_wallet_sweep
Revises: 0017_wallet_web_service
"""
import sqlalchemy as sa
from alembic import op

revision = "0018_wallet_sweep"
down_revision = "0017_wallet_web_service"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweep_marks",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("reached_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_sweep_marks")),
    )
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.create_index("ix_reward_accounts_updated", "reward_accounts", ["updated_at"],
                            postgresql_concurrently=True, if_not_exists=True)
    else:
        op.create_index("ix_reward_accounts_updated", "reward_accounts", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_reward_accounts_updated", table_name="reward_accounts")
    op.drop_table("sweep_marks")
