"""an index of a company's webhook deliveries, newest last

The back office's webhooks page shows a company's latest deliveries (app.services.webhooks.
history.latest_deliveries): with (company_id, created_at, id) it reads the page's rows and no
others, in their order; without it, every delivery the company has. Built CONCURRENTLY on
PostgreSQL, so the worker's delivery bookkeeping goes on meanwhile.

Revision ID: 0029_deliveries_by_company
Revises: 0028_expiry_indexes_partial
"""
from alembic import op

revision = "0029_deliveries_by_company"
down_revision = "0028_expiry_indexes_partial"
branch_labels = None
depends_on = None

INDEX, COLUMNS = "ix_webhook_deliveries_company_recent", ["company_id", "created_at", "id"]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.create_index(INDEX, "webhook_deliveries", COLUMNS, postgresql_concurrently=True,
                            if_not_exists=True)
    else:
        op.create_index(INDEX, "webhook_deliveries", COLUMNS)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="webhook_deliveries")
