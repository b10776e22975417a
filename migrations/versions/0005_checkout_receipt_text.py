"""checkout: the receipt text printed at commit, kept with the sale

A reprint (sale lookup) shows what was printed, with the balance as it was after the sale.

Revision ID: 0005_checkout_receipt_text
Revises: 0004_customers_trgm
"""
from alembic import op
import sqlalchemy as sa


revision = '0005_checkout_receipt_text'
down_revision = "0004_customers_trgm"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sales', schema=None) as batch_op:
        batch_op.add_column(sa.Column('receipt_text', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('sales', schema=None) as batch_op:
        batch_op.drop_column('receipt_text')
