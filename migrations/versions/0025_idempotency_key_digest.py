"""the idempotency records' primary key: the company and a digest of operation and key

Every idempotent request inserts an entry into this key at a random place (the keys are the
registers'), so its width is WAL a request and, after each checkpoint, about one page written
whole to the WAL at each insert (docs/performance.md, "The database's share of a checkout").
The key was (company, operation, key) as text, some 130 bytes an entry; it is now the company
and 16 bytes of SHA-256 of the operation and the key (app/models/idempotency.py: key_digest),
some 60. The operation and the key stay in the row, and a lookup compares them too. Nothing the
API shows changes; the records' rows are rewritten once, under the table's lock (they live a
day: docs/api.md#idempotency).

Revision ID: 0025_idempotency_key_digest
Revises: 0024_checkout_database_share
"""
import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0025_idempotency_key_digest"
down_revision = "0024_checkout_database_share"
branch_labels = None
depends_on = None

TABLE, KEY = "idempotency_records", "pk_idempotency_records"
DIGEST_BYTES = 16  # as app/models/idempotency.py: the migration keeps its own copy
RECORDS = sa.table(TABLE, sa.column("company_id"), sa.column("operation"), sa.column("key"),
                   sa.column("key_digest", sa.LargeBinary))


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def _fill_digests() -> None:
    """Each record's digest: SHA-256 of "operation, a line break, key", its first 16 bytes."""
    if _postgresql():
        text = sa.func.concat(RECORDS.c.operation, sa.literal("\n"), RECORDS.c.key)
        op.execute(RECORDS.update().values(key_digest=sa.func.substr(
            sa.func.sha256(sa.func.convert_to(text, "UTF8")), 1, DIGEST_BYTES)))
        return
    connection = op.get_bind()
    rows = connection.execute(sa.select(RECORDS.c.company_id, RECORDS.c.operation,
                                        RECORDS.c.key)).all()
    for company_id, operation, key in rows:
        digest = hashlib.sha256(f"{operation}\n{key}".encode("utf-8")).digest()[:DIGEST_BYTES]
        connection.execute(RECORDS.update().where(
            RECORDS.c.company_id == company_id, RECORDS.c.operation == operation,
            RECORDS.c.key == key).values(key_digest=digest))


def upgrade() -> None:
    op.add_column(TABLE, sa.Column("key_digest", sa.LargeBinary(DIGEST_BYTES), nullable=True))
    _fill_digests()
    with op.batch_alter_table(TABLE) as batch_op:
        batch_op.alter_column("key_digest", existing_type=sa.LargeBinary(DIGEST_BYTES),
                              nullable=False)
        batch_op.drop_constraint(KEY, type_="primary")
        batch_op.create_primary_key(KEY, ["company_id", "key_digest"])


def downgrade() -> None:
    with op.batch_alter_table(TABLE) as batch_op:
        batch_op.drop_constraint(KEY, type_="primary")
        batch_op.create_primary_key(KEY, ["company_id", "operation", "key"])
        batch_op.drop_column("key_digest")
