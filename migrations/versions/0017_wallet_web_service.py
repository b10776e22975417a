"""wallet passes that update themselves (docs/api.md#wallet)

`wallet_passes` keeps the digest of each downloaded pass's authenticationToken;
`wallet_registrations` the devices registered for a pass's updates, and the push waiting for
each. The pass's update tag is its reward account's `updated_at`, which every change of the
balance already writes: nothing is added to the register's statements.

Revision ID: 0017_wallet_web_service
Revises: 0016_report_indexes
"""
import sqlalchemy as sa
from alembic import op

revision = "0017_wallet_web_service"
down_revision = "0016_report_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wallet_passes",
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("customer_id", sa.String(length=36), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["company_id", "customer_id"],
                                ["customers.company_id", "customers.id"],
                                name=op.f("fk_wallet_passes_company_id_customer_id_customers")),
        sa.PrimaryKeyConstraint("company_id", "customer_id", name=op.f("pk_wallet_passes")),
    )
    op.create_index("ix_wallet_passes_customer", "wallet_passes", ["customer_id"])
    op.create_table(
        "wallet_registrations",
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("customer_id", sa.String(length=36), nullable=False),
        sa.Column("device_library_id", sa.String(length=128), nullable=False),
        sa.Column("push_token", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("push_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("push_attempts", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["company_id", "customer_id"], ["wallet_passes.company_id", "wallet_passes.customer_id"],
            name=op.f("fk_wallet_registrations_company_id_customer_id_wallet_passes")),
        sa.PrimaryKeyConstraint("company_id", "customer_id", "device_library_id",
                                name=op.f("pk_wallet_registrations")),
    )
    op.create_index("ix_wallet_registrations_device", "wallet_registrations",
                    ["device_library_id"])
    op.create_index("ix_wallet_registrations_push_due", "wallet_registrations", ["push_due_at"])


def downgrade() -> None:
    op.drop_index("ix_wallet_registrations_push_due", table_name="wallet_registrations")
    op.drop_index("ix_wallet_registrations_device", table_name="wallet_registrations")
    op.drop_table("wallet_registrations")
    op.drop_index("ix_wallet_passes_customer", table_name="wallet_passes")
    op.drop_table("wallet_passes")
