"""gift-card lookup misses per key (the rate limit's counter without Redis)

Revision ID: 0007_gift_card_misses
Revises: 0005_checkout_receipt_text
"""
from alembic import op
import sqlalchemy as sa


revision = "0007_gift_card_misses"
down_revision = "0005_checkout_receipt_text"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gift_card_lookup_misses",
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("credential_id", sa.String(length=36), nullable=False),
        sa.Column("window_started", sa.BigInteger(), nullable=False),
        sa.Column("misses", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"],
                                name=op.f("fk_gift_card_lookup_misses_company_id_companies")),
        sa.PrimaryKeyConstraint("company_id", "credential_id",
                                name=op.f("pk_gift_card_lookup_misses")),
    )


def downgrade() -> None:
    op.drop_table("gift_card_lookup_misses")
