"""the back office in a browser: staff, their sessions and welcome links, the sign-in
lockout's failures, and the audit record of every change

Sessions and welcome links are found by their token's digest alone, and members by their
email alone (indexes of their own), as keys are by digest; every key still leads with the
company. An email is anyone's once in the service: `staff_emails`, a table without a
company, holds that rule.

Revision ID: 0023_staff_portal
Revises: 0021_program_tiers_changed_at
"""
import sqlalchemy as sa
from alembic import op

revision = "0023_staff_portal"
down_revision = "0022_offline_sales"
branch_labels = None
depends_on = None

MEMBER = ["staff_members.company_id", "staff_members.id"]


def _of_member(table: str) -> list:
    return [
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("staff_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(["company_id", "staff_id"], MEMBER, ondelete="CASCADE",
                                name=op.f(f"fk_{table}_company_id_staff_id_staff_members")),
        sa.PrimaryKeyConstraint("company_id", "token_digest", name=op.f(f"pk_{table}")),
    ]


def _of_company(table: str, *columns) -> None:
    """A table keyed (company_id, id) with its creation time, as the models' TenantMixin."""
    op.create_table(
        table,
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        *columns,
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"],
                                name=op.f(f"fk_{table}_company_id_companies")),
        sa.PrimaryKeyConstraint("company_id", "id", name=op.f(f"pk_{table}")),
    )


def _indexes_of_member(table: str) -> None:
    op.create_index(f"ix_{table}_member", table, ["company_id", "staff_id"])
    op.create_index(f"ix_{table}_token_digest", table, ["token_digest"])


def upgrade() -> None:
    op.create_table(
        "staff_emails",
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.PrimaryKeyConstraint("email", name=op.f("pk_staff_emails")),
    )
    _of_company(
        "staff_members",
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=True),
        sa.Column("locale", sa.String(length=8), nullable=True),
        sa.UniqueConstraint("company_id", "email", name=op.f("uq_staff_members_company_id_email")),
    )
    op.create_index("ix_staff_members_email", "staff_members", ["email"])
    op.create_table(
        "staff_sessions", *_of_member("staff_sessions"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
    )
    _indexes_of_member("staff_sessions")
    op.create_table(
        "staff_invitations", *_of_member("staff_invitations"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    _indexes_of_member("staff_invitations")
    op.create_table(
        "staff_sign_in_failures",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                  autoincrement=True, nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_staff_sign_in_failures")),
    )
    op.create_index("ix_staff_sign_in_failures_email", "staff_sign_in_failures",
                    ["email", "failed_at"])
    _of_company(
        "audit_events",
        sa.Column("actor_kind", sa.String(length=16), nullable=False),
        sa.Column("actor_id", sa.String(length=36), nullable=True),
        sa.Column("actor_name", sa.String(length=254), nullable=True),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("target_type", sa.String(length=40), nullable=False),
        sa.Column("target_id", sa.String(length=36), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=True),
    )
    op.create_index("ix_audit_events_company_created", "audit_events",
                    ["company_id", "created_at"])
    op.create_index("ix_audit_events_target", "audit_events", ["company_id", "target_id"])


def downgrade() -> None:
    op.drop_table("audit_events")
    op.drop_table("staff_sign_in_failures")
    op.drop_table("staff_invitations")
    op.drop_table("staff_sessions")
    op.drop_table("staff_members")
    op.drop_table("staff_emails")
