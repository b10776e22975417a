"""points that expire: lots, the program's lifetime and reminder settings (docs/api.md#expiry)

Every credit becomes a lot (`reward_lots`) with its own expiry; the account keeps the next
moment something expires or is to be reminded of, so a touch costs nothing until then; a sale
keeps when the earliest lot its redemption took from expires, for a return's restore.

Existing accounts get their lots here, so that Σ lots' remaining = max(0, Σ ACTIVE entries)
holds on a database made before: one lot per account holding that sum, never expiring (no
program had a lifetime then), its id the customer's. Programs keep points forever (lifetime
null) and remind 7 days ahead, the defaults.

Revision ID: 0011_reward_lots
Revises: 0010_deliveries_by_event
"""
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = "0011_reward_lots"
down_revision = "0010_deliveries_by_event"
branch_labels = None
depends_on = None

OPEN_LOTS = sa.text("remaining > 0")


def upgrade() -> None:
    with op.batch_alter_table("programs") as batch_op:
        batch_op.add_column(sa.Column("points_lifetime_days", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("expiry_reminder_days", sa.Integer(), nullable=True))
    op.execute("UPDATE programs SET expiry_reminder_days = 7")
    with op.batch_alter_table("reward_accounts") as batch_op:
        batch_op.add_column(sa.Column("next_expiry_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("next_reminder_at", sa.DateTime(timezone=True), nullable=True))
    for column in ("next_expiry_at", "next_reminder_at"):
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(f"ix_reward_accounts_{column.removeprefix('next_').removesuffix('_at')}",
                        "reward_accounts", [column], postgresql_where=where, sqlite_where=where)
    with op.batch_alter_table("sales") as batch_op:
        batch_op.add_column(sa.Column("redemption_expires_at", sa.DateTime(timezone=True),
                                      nullable=True))
    op.create_table(
        "reward_lots",
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("customer_id", sa.String(length=36), nullable=False),
        sa.Column("sale_id", sa.String(length=36), nullable=True),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("remaining", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("remind_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["company_id", "customer_id"],
                                ["customers.company_id", "customers.id"],
                                name=op.f("fk_reward_lots_company_id_customer_id_customers")),
        sa.PrimaryKeyConstraint("company_id", "id", name=op.f("pk_reward_lots")),
    )
    op.create_index("ix_reward_lots_open", "reward_lots", ["company_id", "customer_id"],
                    postgresql_where=OPEN_LOTS, sqlite_where=OPEN_LOTS)
    _bring_balances_forward()


def _bring_balances_forward() -> None:
    """One set-based statement: each account's Σ ACTIVE entries, where positive, as a lot."""
    now = datetime.now(timezone.utc)
    if op.get_bind().dialect.name == "sqlite":  # the app's UtcDateTime keeps UTC, zone-less
        now = now.replace(tzinfo=None)
    op.get_bind().execute(sa.text(
        "INSERT INTO reward_lots (company_id, id, customer_id, sale_id, amount, remaining, "
        "expires_at, remind_at, created_at) "
        "SELECT company_id, customer_id, customer_id, NULL, total, total, NULL, NULL, :now "
        "FROM (SELECT company_id, customer_id, SUM(amount) AS total FROM ledger_entries "
        "      WHERE status = 'ACTIVE' GROUP BY company_id, customer_id) AS balances "
        "WHERE total > 0").bindparams(sa.bindparam("now", now, type_=sa.DateTime(timezone=True))))


def downgrade() -> None:
    op.drop_index("ix_reward_lots_open", table_name="reward_lots")
    op.drop_table("reward_lots")
    with op.batch_alter_table("sales") as batch_op:
        batch_op.drop_column("redemption_expires_at")
    op.drop_index("ix_reward_accounts_reminder", table_name="reward_accounts")
    op.drop_index("ix_reward_accounts_expiry", table_name="reward_accounts")
    with op.batch_alter_table("reward_accounts") as batch_op:
        batch_op.drop_column("next_reminder_at")
        batch_op.drop_column("next_expiry_at")
    with op.batch_alter_table("programs") as batch_op:
        batch_op.drop_column("expiry_reminder_days")
        batch_op.drop_column("points_lifetime_days")
