"""an index of webhook deliveries by their event

Pruning delivered events (app.services.retention) asks, for each old event, whether any of
its deliveries is unfinished, and deleting an event checks the deliveries' foreign key to it:
without an index on (company_id, event_id) each of those reads the whole deliveries table.
Built CONCURRENTLY on PostgreSQL, so the worker's delivery bookkeeping goes on meanwhile.

Revision ID: 0010_deliveries_by_event
Revises: 0009_register_path_keys
"""
from alembic import op

revision = "0010_deliveries_by_event"
down_revision = "0009_register_path_keys"
branch_labels = None
depends_on = None

INDEX = "ix_webhook_deliveries_event"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            op.create_index(INDEX, "webhook_deliveries", ["company_id", "event_id"],
                            postgresql_concurrently=True, if_not_exists=True)
    else:
        op.create_index(INDEX, "webhook_deliveries", ["company_id", "event_id"])


def downgrade() -> None:
    op.drop_index(INDEX, table_name="webhook_deliveries")
