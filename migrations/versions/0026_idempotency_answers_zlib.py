"""the idempotency records keep their answers compressed

An idempotent request's answer is stored with its record for a replay, and every byte of it is
WAL: a checkout's four answers (open, quote, hold, commit) are some 2.7 KB of JSON, 1.2 KB
compressed with zlib (docs/performance.md, "The database's share of a checkout"). New answers
go to `answer` (zlib, app/web/idempotency.py); the answers stored before stay in
`response_body` as text, replayed as they are, until their records expire (a day:
docs/api.md#idempotency). The way down writes each compressed answer back as text, so no
stored answer is lost and no retry runs its effect twice.

Revision ID: 0026_idempotency_answers_zlib
Revises: 0025_idempotency_key_digest
"""
import zlib

import sqlalchemy as sa
from alembic import op

revision = "0026_idempotency_answers_zlib"
down_revision = "0025_idempotency_key_digest"
branch_labels = None
depends_on = None

TABLE = "idempotency_records"
RECORDS = sa.table(TABLE, sa.column("company_id"), sa.column("key_digest", sa.LargeBinary),
                   sa.column("answer", sa.LargeBinary), sa.column("response_body"))


def upgrade() -> None:
    op.add_column(TABLE, sa.Column("answer", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    connection = op.get_bind()
    compressed = connection.execute(sa.select(RECORDS.c.company_id, RECORDS.c.key_digest,
                                              RECORDS.c.answer)
                                    .where(RECORDS.c.answer.is_not(None))).all()
    for company_id, digest, answer in compressed:
        connection.execute(RECORDS.update().where(
            RECORDS.c.company_id == company_id, RECORDS.c.key_digest == digest).values(
            response_body=zlib.decompress(answer).decode("utf-8")))
    with op.batch_alter_table(TABLE) as batch_op:
        batch_op.drop_column("answer")
