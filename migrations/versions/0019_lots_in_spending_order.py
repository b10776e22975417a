"""a customer's open lots indexed in spending order; the ledger's unread maturing index dropped

A touch reads an account's first 32 open lots in spending order (app.services.rewards.lots).
`ix_reward_lots_open (company_id, customer_id) WHERE remaining > 0` found them, but PostgreSQL
then read every open lot of the customer and sorted them: a customer who shops daily keeps
hundreds, so a hold and a commit cost more with every sale. `ix_reward_lots_spending` holds them
in that order (expires_at ascending, nulls last, then created_at and id), so the page is read
from the index and no further.

`ix_ledger_entries_maturing (status, available_at)` has had no reader since maturing became
the account's `next_maturity_at` (a task picks the accounts by it, a touch reads its own
entries by `ix_ledger_entries_customer`): every ledger entry paid an index entry for nothing.

Built and dropped CONCURRENTLY on PostgreSQL: the registers keep writing meanwhile.

Revision ID: 0019_lots_in_spending_order
Revises: 0018_wallet_sweep
"""
import sqlalchemy as sa
from alembic import op

revision = "0019_lots_in_spending_order"
down_revision = "0018_wallet_sweep"
branch_labels = None
depends_on = None

OPEN = sa.text("remaining > 0")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.create_index("ix_reward_lots_spending", "reward_lots",
                            ["company_id", "customer_id", "expires_at", "created_at", "id"],
                            postgresql_where=OPEN, postgresql_concurrently=True,
                            if_not_exists=True)
            op.drop_index("ix_reward_lots_open", table_name="reward_lots",
                          postgresql_concurrently=True, if_exists=True)
            op.drop_index("ix_ledger_entries_maturing", table_name="ledger_entries",
                          postgresql_concurrently=True, if_exists=True)
    else:
        op.create_index("ix_reward_lots_spending", "reward_lots",
                        ["company_id", "customer_id", "expires_at", "created_at", "id"],
                        sqlite_where=OPEN)
        op.drop_index("ix_reward_lots_open", table_name="reward_lots")
        op.drop_index("ix_ledger_entries_maturing", table_name="ledger_entries")


def downgrade() -> None:
    op.create_index("ix_ledger_entries_maturing", "ledger_entries", ["status", "available_at"])
    op.create_index("ix_reward_lots_open", "reward_lots", ["company_id", "customer_id"],
                    postgresql_where=OPEN, sqlite_where=OPEN)
    op.drop_index("ix_reward_lots_spending", table_name="reward_lots")
