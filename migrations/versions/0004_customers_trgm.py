"""trigram indexes for the customer directory's substring search (PostgreSQL only)

The directory's `query` matches a fragment anywhere in the phone or the name, which a
B-tree cannot serve; pg_trgm's GIN indexes answer `LIKE '%fragment%'` from the index at a
million customers per company. The name index is on the exact expression
`app.services.customers.profiles.FULL_NAME` queries. SQLite scans (it is the embedded default).

Revision ID: 0004_customers_trgm
Revises: 0001
"""
from alembic import op

revision = "0004_customers_trgm"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute("CREATE INDEX ix_customers_phone_trgm ON customers USING gin (phone gin_trgm_ops)")
    op.execute("CREATE INDEX ix_customers_name_trgm ON customers "
               "USING gin (lower(first_name || ' ' || coalesce(last_name, '')) gin_trgm_ops)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_customers_name_trgm")
    op.execute("DROP INDEX IF EXISTS ix_customers_phone_trgm")
