"""the reports' indexes: each report reads one company's rows of a period, not the table

The reports (docs/api.md#reports) ask for one company's sales, ledger entries and returns of a
period of Moscow days. The keys the register path has lead with the customer or the sale, so without
these each report would read every row of the company. Two carry the columns their report
sums (PostgreSQL INCLUDE), so the sums come from the index alone; the matured entries' and the
campaign lines' are partial, kept only for the rows they serve. Built CONCURRENTLY on
PostgreSQL: the registers keep writing while a big table is indexed (docs/decisions.md,
reports).

Revision ID: 0016_report_indexes
Revises: 0015_webhook_secret_rotation
"""
import sqlalchemy as sa
from alembic import op

revision = "0016_report_indexes"
down_revision = "0015_webhook_secret_rotation"
branch_labels = None
depends_on = None

# name, table, columns, PostgreSQL INCLUDE, partial on
INDEXES = (
    ("ix_sales_company_committed", "sales", ["company_id", "committed_at"], [], None),
    ("ix_ledger_entries_company_created", "ledger_entries", ["company_id", "created_at"],
     ["type", "amount"], None),
    ("ix_ledger_entries_matured", "ledger_entries", ["company_id", "available_at"],
     ["status", "amount"], "available_at > created_at"),
    ("ix_returns_company_created", "returns", ["company_id", "created_at"], [], None),
    ("ix_sale_lines_campaign", "sale_lines", ["company_id", "campaign_id"], ["sale_id", "accrual"],
     "campaign_id IS NOT NULL"),
)


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name, table, columns, include, where in INDEXES:
        partial = sa.text(where) if where else None
        if postgresql:
            with op.get_context().autocommit_block():
                op.create_index(name, table, columns, postgresql_concurrently=True,
                                if_not_exists=True, postgresql_include=include,
                                postgresql_where=partial)
        else:
            op.create_index(name, table, columns, sqlite_where=partial)


def downgrade() -> None:
    for name, table, *_ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
