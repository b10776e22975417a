"""no direct keys to companies from the rows every register request writes (PostgreSQL)

A foreign key check takes a KEY SHARE lock on the referenced row. Every checkout wrote about
a dozen rows referencing the one row of its company in `companies`, so the company's
registers kept locking that single row together, and PostgreSQL turned each new locker into
a new MultiXact. These rows still name their company through a parent that references it
(the customer, the checkout session, the sale, the store) or carry the company of the
authenticated key (idempotency records, outbox events); companies are never deleted.

SQLite keeps the constraints: it has one writer at a time, so nothing contends, and dropping
a constraint there rebuilds the table.

Revision ID: 0009_register_path_keys
Revises: 0008_customer_names
"""
from alembic import op

revision = "0009_register_path_keys"
down_revision = "0008_customer_names"
branch_labels = None
depends_on = None

TABLES = ("checkout_sessions", "quotes", "holds", "sales", "returns", "ledger_entries",
          "outbox_events", "idempotency_records", "catalog_items")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.drop_constraint(f"fk_{table}_company_id_companies", table, type_="foreignkey")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.create_foreign_key(f"fk_{table}_company_id_companies", table, "companies",
                              ["company_id"], ["id"])
