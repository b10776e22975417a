"""the database's share of a checkout: an index nothing reads goes, the answer's update stays HOT

What a checkout costs PostgreSQL bounds one database's tenants (docs/performance.md, "The
database's share of a checkout", bench/database_share.py). Nothing the API shows changes:

- `ix_checkout_sessions_receipt` (company, the register's receipt id) is read by no query: a
  receipt is matched to its sale through the sales' own unique key. Every checkout paid for
  an entry in it, at a random place (receipt ids are the registers'), so after each
  checkpoint nearly every insert wrote a whole page of it to the WAL.
- `idempotency_records` fills a page only to 30 % with new records (`fillfactor` 30): a
  request writes its record first (about 200 bytes) and its answer into the same row when
  done (some 700 bytes), so a page of new records only has room for their answers when they
  start at a third of it. Then that update is a HOT one, on the same page, with no new
  entries in the record's two indexes (one of them wide: company, operation and key); the
  pages end about as full as before, of answered records. PostgreSQL only; pages written
  before keep their fill until they are rewritten.

Revision ID: 0024_checkout_database_share
Revises: 0021_program_tiers_changed_at
"""
import sqlalchemy as sa
from alembic import op

revision = "0024_checkout_database_share"
down_revision = "0023_staff_portal"
branch_labels = None
depends_on = None

UNREAD_INDEX, ITS_TABLE, ITS_COLUMNS = ("ix_checkout_sessions_receipt", "checkout_sessions",
                                        ["company_id", "external_receipt_id"])
ANSWERED_IN_PLACE = "idempotency_records"
FILLFACTOR = 30  # percent of a page new records fill: room for their answers' updates


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if _postgresql():
        with op.get_context().autocommit_block():  # the registers keep writing meanwhile
            op.drop_index(UNREAD_INDEX, table_name=ITS_TABLE, postgresql_concurrently=True,
                          if_exists=True)
        op.execute(sa.text(f'ALTER TABLE "{ANSWERED_IN_PLACE}" SET (fillfactor = {FILLFACTOR})'))
    else:
        op.drop_index(UNREAD_INDEX, table_name=ITS_TABLE)


def downgrade() -> None:
    if _postgresql():
        op.execute(sa.text(f'ALTER TABLE "{ANSWERED_IN_PLACE}" RESET (fillfactor)'))
        with op.get_context().autocommit_block():
            op.create_index(UNREAD_INDEX, ITS_TABLE, ITS_COLUMNS, postgresql_concurrently=True,
                            if_not_exists=True)
    else:
        op.create_index(UNREAD_INDEX, ITS_TABLE, ITS_COLUMNS)
