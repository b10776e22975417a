"""the expiry indexes of sessions and holds keep only the live rows

The upkeep finds the sessions (OPEN or HELD) and the holds (ACTIVE) whose time has run out
by `ix_checkout_sessions_expiry` and `ix_holds_expiry`, which were on (state, expires_at) over
every row ever written. A checkout's hold and commit change those states, and each change wrote
a new entry into both, at a random place after each checkpoint (docs/performance.md, "The
database's share of a checkout"). Now each is on `expires_at` over its live rows only: a
session's commit and a hold's capture add no entry to them, and they stay the size of what is
live. The queries that read them (app/services/checkout/holds.py, the ledger check's active
holds) ask for exactly those states.

Revision ID: 0028_expiry_indexes_partial
Revises: 0027_quote_lines_zlib
"""
import sqlalchemy as sa
from alembic import op

revision = "0028_expiry_indexes_partial"
down_revision = "0027_quote_lines_zlib"
branch_labels = None
depends_on = None

# (index, table, the live rows)
EXPIRY = [("ix_checkout_sessions_expiry", "checkout_sessions", "state IN ('OPEN', 'HELD')"),
          ("ix_holds_expiry", "holds", "state = 'ACTIVE'")]


def _replace(columns_of, where_of) -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name, table, live in EXPIRY:
        columns, where = columns_of(), where_of(live)
        if postgresql:
            with op.get_context().autocommit_block():  # the registers keep writing meanwhile
                op.drop_index(name, table_name=table, postgresql_concurrently=True,
                              if_exists=True)
                op.create_index(name, table, columns, postgresql_concurrently=True,
                                postgresql_where=where)
        else:
            op.drop_index(name, table_name=table)
            op.create_index(name, table, columns, sqlite_where=where)


def upgrade() -> None:
    _replace(lambda: ["expires_at"], sa.text)


def downgrade() -> None:
    _replace(lambda: ["state", "expires_at"], lambda live: None)
