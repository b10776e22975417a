"""webhook endpoints keep the secret a rotation replaced, until its grace ends
(docs/api.md#webhooks)

`previous_secret_encrypted` (Fernet, like `secret_encrypted`) and `previous_secret_valid_until`:
while that moment is ahead, every delivery is signed with both secrets. Existing endpoints were
never rotated, so both start empty.

Revision ID: 0015_webhook_secret_rotation
Revises: 0014_credential_previous_keys
"""
import sqlalchemy as sa
from alembic import op

revision = "0015_webhook_secret_rotation"
down_revision = "0014_credential_previous_keys"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.add_column(sa.Column("previous_secret_encrypted", sa.Text(), nullable=True))
        batch.add_column(sa.Column("previous_secret_valid_until", sa.DateTime(timezone=True),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.drop_column("previous_secret_valid_until")
        batch.drop_column("previous_secret_encrypted")
