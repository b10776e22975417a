"""a quote's lines are kept packed

A quote keeps the receipt's lines with their catalog flags for the commit to read back, some
800 bytes of JSON for four lines, every byte WAL (docs/performance.md, "The database's share of
a checkout"); packed with zlib (app/wire.py: packed) about a third of that. New quotes
fill `packed_lines`; quotes made before keep `lines` as text and are read as they are. The way
down writes every packed quote's lines back as text (one statement a quote).

Revision ID: 0027_quote_lines_zlib
Revises: 0026_idempotency_answers_zlib
"""
import zlib

import sqlalchemy as sa
from alembic import op

revision = "0027_quote_lines_zlib"
down_revision = "0026_idempotency_answers_zlib"
branch_labels = None
depends_on = None

QUOTES = sa.table("quotes", sa.column("company_id"), sa.column("id"),
                  sa.column("packed_lines", sa.LargeBinary), sa.column("lines"))


def upgrade() -> None:
    with op.batch_alter_table("quotes") as batch_op:
        batch_op.add_column(sa.Column("packed_lines", sa.LargeBinary(), nullable=True))
        batch_op.alter_column("lines", existing_type=sa.Text(), nullable=True)


def downgrade() -> None:
    connection = op.get_bind()
    for company_id, quote_id, packed in connection.execute(
            sa.select(QUOTES.c.company_id, QUOTES.c.id, QUOTES.c.packed_lines)
            .where(QUOTES.c.packed_lines.is_not(None))).all():
        connection.execute(QUOTES.update().where(
            QUOTES.c.company_id == company_id, QUOTES.c.id == quote_id).values(
            lines=zlib.decompress(packed).decode("utf-8")))
    with op.batch_alter_table("quotes") as batch_op:
        batch_op.alter_column("lines", existing_type=sa.Text(), nullable=False)
        batch_op.drop_column("packed_lines")
