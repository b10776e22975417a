"""the directory's name search reads a narrow table of names, not the wide customers rows

A name fragment matching ~2 % of a million customers rechecked every trigram match in the
customers heap (218 MB of wide rows, more than PostgreSQL's stock shared_buffers). Each
customer's lower-cased "first last" and enrolment time now live in `customer_names`, filled
here from the customers already enrolled, with the trigram index on it (PostgreSQL); the
trigram index on the customers' name expression goes. SQLite scans, as before.

Revision ID: 0008_customer_names
Revises: 0007_gift_card_misses
"""
from alembic import op
import sqlalchemy as sa


revision = "0008_customer_names"
down_revision = "0007_gift_card_misses"
branch_labels = None
depends_on = None

# The expression of app.services.customers.profiles.FULL_NAME. On SQLite the migration's connection
# has the app's Unicode-aware lower() (app.database.engine.make_engine), so Cyrillic folds there too.
FULL_NAME = "lower(first_name || ' ' || coalesce(last_name, ''))"


def upgrade() -> None:
    op.create_table(
        "customer_names",
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("card_number", sa.String(length=13), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("full_name", sa.String(length=201), nullable=False),
        sa.ForeignKeyConstraint(["company_id", "card_number"],
                                ["customers.company_id", "customers.card_number"],
                                name=op.f("fk_customer_names_company_id_card_number_customers")),
        sa.PrimaryKeyConstraint("company_id", "card_number", name=op.f("pk_customer_names")),
    )
    op.execute("INSERT INTO customer_names (company_id, card_number, created_at, full_name) "
               f"SELECT company_id, card_number, created_at, {FULL_NAME} FROM customers")
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE INDEX ix_customer_names_full_name_trgm ON customer_names "
               "USING gin (full_name gin_trgm_ops)")
    op.execute("DROP INDEX IF EXISTS ix_customers_name_trgm")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE INDEX ix_customers_name_trgm ON customers "
                   f"USING gin ({FULL_NAME} gin_trgm_ops)")
    op.drop_table("customer_names")
