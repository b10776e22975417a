"""the program from the back office: tiers, campaigns, welcome and birthday bonuses
(docs/api.md#tiers)

Programs gain the bonuses, the tiers and their window, and the version of their campaigns;
campaigns get their table. Each sale keeps what it adds to the customer's tier spend, each
sale line its accrual percent and campaign, each reward account its spend, the oldest sale
that spend counts, and the day its next birthday bonus is due. The spends of the sales already
made, of the accounts (over the default 365-day window) and the birthday days are filled here.

Revision ID: 0012_program_tiers_campaigns
Revises: 0011_reward_lots
"""
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from alembic import op

revision = "0012_program_tiers_campaigns"
down_revision = "0011_reward_lots"
branch_labels = None
depends_on = None

DEFAULT_WINDOW_DAYS = 365
MOSCOW = ZoneInfo("Europe/Moscow")


def _next_birthday(birth: date, today: date) -> date:
    """The same rule as app.services.rewards.bonuses.next_birthday (29 February: the 28th)."""
    for year in (today.year, today.year + 1):
        day = 28 if birth.month == 2 and birth.day == 29 and not _leap(year) else birth.day
        due = date(year, birth.month, day)
        if due >= today:
            return due
    raise AssertionError("unreachable")


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def upgrade() -> None:
    with op.batch_alter_table("programs") as batch:
        batch.add_column(sa.Column("welcome_bonus", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("birthday_bonus", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("tiers", sa.Text(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("tier_window_days", sa.Integer(), nullable=True,
                                   server_default=str(DEFAULT_WINDOW_DAYS)))
        batch.add_column(sa.Column("campaigns_version", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "campaigns",
        sa.Column("company_id", sa.String(length=36), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("accrual_bp", sa.Integer(), nullable=False),
        sa.Column("skus", sa.Text(), nullable=False),
        sa.Column("categories", sa.Text(), nullable=False),
        sa.Column("store_ids", sa.Text(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["company_id"], ["companies.id"],
                                name=op.f("fk_campaigns_company_id_companies")),
        sa.PrimaryKeyConstraint("company_id", "id", name=op.f("pk_campaigns")),
    )
    op.create_index("ix_campaigns_newest", "campaigns", ["company_id", "created_at"])

    with op.batch_alter_table("sales") as batch:
        batch.add_column(sa.Column("spend", sa.BigInteger(), nullable=False, server_default="0"))
    with op.batch_alter_table("sale_lines") as batch:
        batch.add_column(sa.Column("accrual_bp", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("campaign_id", sa.String(length=36), nullable=True))
    with op.batch_alter_table("reward_accounts") as batch:
        batch.add_column(sa.Column("spend", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("spend_oldest_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("birthday_due_on", sa.Date(), nullable=True))
    op.create_index("ix_sales_customer_committed", "sales",
                    ["company_id", "customer_id", "committed_at"])
    op.create_index("ix_reward_accounts_spend_oldest", "reward_accounts",
                    ["company_id", "spend_oldest_at"])
    op.create_index("ix_reward_accounts_birthday", "reward_accounts", ["birthday_due_on"])
    _fill()


def _fill() -> None:
    bind = op.get_bind()
    # numeric on PostgreSQL: amount × quantity may exceed a bigint before the division.
    product = ("div((l.amount - l.discount)::numeric * (l.quantity - l.returned_quantity), l.quantity)"
               if bind.dialect.name == "postgresql" else
               "(l.amount - l.discount) * (l.quantity - l.returned_quantity) / l.quantity")
    op.execute(f"UPDATE sales SET spend = (SELECT coalesce(sum({product}), 0) FROM sale_lines l "
               "WHERE l.company_id = sales.company_id AND l.sale_id = sales.id)")
    now = datetime.now(timezone.utc)
    since = now - timedelta(days=DEFAULT_WINDOW_DAYS)
    in_window = ("FROM sales s WHERE s.company_id = reward_accounts.company_id "
                 "AND s.customer_id = reward_accounts.customer_id AND s.committed_at > :since")
    postgresql = bind.dialect.name == "postgresql"
    # SQLite keeps times as SQLAlchemy writes them: naive UTC text.
    since_value = since if postgresql else since.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    bind.execute(sa.text(f"UPDATE reward_accounts SET spend = (SELECT coalesce(sum(s.spend), 0) "
                         f"{in_window}), spend_oldest_at = (SELECT min(s.committed_at) {in_window})"),
                 {"since": since_value})
    today = now.astimezone(MOSCOW).date()
    customers = bind.execute(sa.text(
        "SELECT company_id, id, birth_date FROM customers WHERE birth_date IS NOT NULL")).all()
    for company_id, customer_id, birth in customers:
        if isinstance(birth, str):  # SQLite hands a Date back as text through text()
            birth = date.fromisoformat(birth)
        due = _next_birthday(birth, today)
        bind.execute(sa.text("UPDATE reward_accounts SET birthday_due_on = :due "
                             "WHERE company_id = :company AND customer_id = :customer"),
                     {"due": due if postgresql else due.isoformat(), "company": company_id,
                      "customer": customer_id})


def downgrade() -> None:
    op.drop_index("ix_reward_accounts_birthday", table_name="reward_accounts")
    op.drop_index("ix_reward_accounts_spend_oldest", table_name="reward_accounts")
    op.drop_index("ix_sales_customer_committed", table_name="sales")
    with op.batch_alter_table("reward_accounts") as batch:
        for column in ("birthday_due_on", "spend_oldest_at", "spend"):
            batch.drop_column(column)
    with op.batch_alter_table("sale_lines") as batch:
        batch.drop_column("campaign_id")
        batch.drop_column("accrual_bp")
    with op.batch_alter_table("sales") as batch:
        batch.drop_column("spend")
    op.drop_index("ix_campaigns_newest", table_name="campaigns")
    op.drop_table("campaigns")
    with op.batch_alter_table("programs") as batch:
        for column in ("campaigns_version", "tier_window_days", "tiers", "birthday_bonus",
                       "welcome_bonus"):
            batch.drop_column(column)
