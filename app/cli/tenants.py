"""Operator commands for the schema, companies, keys, programs, subscriptions and the demo."""
from __future__ import annotations

import sys
from datetime import datetime, timezone

import click
from flask import current_app
from flask.cli import AppGroup, with_appcontext

from app import wire
from app.api.fields import MAX_AMOUNT
from app.cli.errors import refuse
from app.cli.operator import existing_company, operator_session
from app.database.engine import utcnow
from app.services.audit import events as audit
from app.services.checkout.offline import LONGEST_WINDOW_DAYS as LONGEST_OFFLINE_WINDOW_DAYS
from app.services.program import settings
from app.services.tenancy import companies, credentials
from app.services.tenancy.scopes import ALL_SCOPES

db_cli = AppGroup("db", help="Database schema.")
companies_cli = AppGroup("companies", help="Tenants.")
credentials_cli = AppGroup("credentials", help="API keys.")
programs_cli = AppGroup("programs", help="Loyalty programs.")
subscriptions_cli = AppGroup("subscriptions", help="Subscriptions.")
idempotency_cli = AppGroup("idempotency", help="Idempotency records.")


def _pepper() -> str:
    return current_app.config["SETTINGS"].api_key_pepper


def _percent(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        return wire.parse_percent(value)
    except ValueError as exc:
        refuse(f"{option}: {exc}")


def _days_or_none(value: str | None, option: str, most: int) -> int | None | object:
    """N (1..most), or "none" for null (companies.NULL); None when the option is not given."""
    if value is None:
        return None
    if value.strip().lower() == "none":
        return companies.NULL
    if not value.strip().isdigit() or not 1 <= int(value) <= most:
        refuse(f"{option}: a whole number of days from 1 to {most}, or none")
    return int(value)


def _days(value: int | None) -> str:
    return "none" if value is None else f"{value} d"


def _name(value: str, option: str) -> str:
    if not value.strip():
        refuse(f"{option} must not be blank")
    return value.strip()


def _instant(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        refuse(f"not an ISO 8601 time: {value}")
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@db_cli.command("upgrade")
def db_upgrade():
    """Apply every migration."""
    from app.database.migrate import upgrade

    upgrade(current_app.config["SETTINGS"].database_url)
    click.echo("migrated")


@companies_cli.command("create")
@click.argument("name")
@click.option("--tariff", default="trial", show_default=True, help="the tariff's name, as billed")
@click.option("--register-limit", type=click.IntRange(0), default=1, show_default=True,
              help="how many ACTIVE terminals the subscription allows")
def companies_create(name, tariff, register_limit):
    """Create a company NAME with its program and a TRIAL subscription; prints its id."""
    name = _name(name, "NAME")
    with operator_session() as session:
        company = companies.create_company(session, name, now=utcnow(), tariff=_name(tariff, "--tariff"),
                                           register_limit=register_limit)
    click.echo(company.id)


@companies_cli.command("list")
def companies_list():
    """Every company, oldest first: id, subscription status, register limit, name."""
    with operator_session() as session:
        rows = companies.list_companies(session)
        for company, subscription in rows:
            click.echo(f"{company.id}\t{subscription.status}\t{subscription.register_limit}\t"
                       f"{company.name}")
    click.echo(f"{len(rows)} companies")


@credentials_cli.command("issue")
@click.argument("company_id")
@click.option("--name", required=True, help="what the key is for, e.g. \"Till 3, Arbat\"")
@click.option("--scopes", help=f"comma-separated, of: {', '.join(ALL_SCOPES)}")
@click.option("--all-scopes", is_flag=True, help="every scope (instead of --scopes)")
def credentials_issue(company_id, name, scopes, all_scopes):
    """Issue a key of COMPANY_ID; prints it (shown once)."""
    if bool(scopes) == all_scopes:
        refuse("give exactly one of --scopes and --all-scopes")
    chosen = list(ALL_SCOPES) if all_scopes else [s.strip() for s in scopes.split(",") if s.strip()]
    with operator_session() as session:
        existing_company(session, company_id)
        _, key = credentials.issue_credential(session, company_id, _name(name, "--name"), chosen,
                                              pepper=_pepper(), now=utcnow(),
                                              actor=audit.operator())
    click.echo(key)


@credentials_cli.command("rotate")
@click.argument("credential_id")
@click.option("--grace-seconds", type=click.IntRange(0, 86400), default=0, show_default=True,
              help="how long the old key keeps working")
def credentials_rotate(credential_id, grace_seconds):
    """Rotate a key; prints the new one."""
    with operator_session() as session:
        credential = _credential_anywhere(session, credential_id)
        _, key = credentials.rotate_credential(session, credential.company_id, credential_id,
                                               grace_seconds=grace_seconds, pepper=_pepper(),
                                               now=utcnow(), actor=audit.operator())
    click.echo(key)


@credentials_cli.command("revoke")
@click.argument("credential_id")
def credentials_revoke(credential_id):
    """Revoke a key at once."""
    with operator_session() as session:
        credential = _credential_anywhere(session, credential_id)
        credentials.revoke_credential(session, credential.company_id, credential_id, now=utcnow(),
                                      actor=audit.operator())
    click.echo(f"revoked {credential_id}")


@credentials_cli.command("list")
@click.argument("company_id")
def credentials_list(company_id):
    """List a company's keys (metadata only): id, prefix, state, name, scopes."""
    with operator_session() as session:
        existing_company(session, company_id)
        rows = credentials.list_credentials(session, company_id)
        for c in rows:
            state = "revoked" if c.revoked_at else "active"
            click.echo(f"{c.id}\t{c.prefix}\t{state}\t{c.name}\t{c.scopes.replace(' ', ',')}")
    click.echo(f"{len(rows)} credentials")


def _credential_anywhere(session, credential_id):
    from app.models import ApiCredential
    from sqlalchemy import select

    credential = session.scalar(select(ApiCredential).where(ApiCredential.id == credential_id))
    if credential is None:
        refuse(f"no credential {credential_id}")
    return credential


@programs_cli.command("set")
@click.argument("company_id")
@click.option("--accrual-percent", help='bonuses earned per rouble paid, e.g. "5" or "7.5"')
@click.option("--max-redeem-percent", help="the largest share of a receipt bonuses may pay")
@click.option("--accrual-delay-days", type=click.IntRange(0, 3650),
              help="days before earned bonuses can be spent (0: at once)")
@click.option("--hold-ttl-seconds", type=click.IntRange(30, 86400),
              help="how long a register's hold lasts without a commit")
@click.option("--enrollment-requires-otp/--no-enrollment-requires-otp", default=None,
              help="whether enrolment needs a confirmed SMS code")
@click.option("--clawback-policy", type=click.Choice(companies.CLAWBACK_POLICIES),
              help="what a return does to bonuses already spent")
@click.option("--welcome-bonus", help='bonuses credited at enrolment, e.g. "100"')
@click.option("--birthday-bonus", help="bonuses credited once a year on the birthday")
@click.option("--tier-window-days", help='days of sales a tier counts (1..3650), or "none": all time')
@click.option("--points-lifetime-days", metavar="N|none",
              help="days a credit's points live before they expire (1..3650); none: never")
@click.option("--expiry-reminder-days", metavar="N|none",
              help="days before points expire that reward.expiring is sent (1..90); none: never")
@click.option("--offline-sale-window-days", type=click.IntRange(0, LONGEST_OFFLINE_WINDOW_DAYS),
              help="days back a register may send a sale it made offline (0: refused)")
def programs_set(company_id, accrual_percent, max_redeem_percent, accrual_delay_days,
                 hold_ttl_seconds, enrollment_requires_otp, clawback_policy, welcome_bonus,
                 birthday_bonus, tier_window_days, points_lifetime_days,
                 expiry_reminder_days, offline_sale_window_days):
    """Change a company's loyalty program (emits program.updated)."""
    with operator_session() as session:
        existing_company(session, company_id)
        program = settings.change_program(
            session, company_id, now=utcnow(), actor=audit.operator(),
            accrual_bp=_percent(accrual_percent, "--accrual-percent"),
            max_redeem_bp=_percent(max_redeem_percent, "--max-redeem-percent"),
            accrual_delay_days=accrual_delay_days,
            hold_ttl_seconds=hold_ttl_seconds, enrollment_requires_otp=enrollment_requires_otp,
            clawback_policy=clawback_policy,
            welcome_bonus=_bonus(welcome_bonus, "--welcome-bonus"),
            birthday_bonus=_bonus(birthday_bonus, "--birthday-bonus"),
            tier_window_days=_window(tier_window_days),
            points_lifetime_days=_days_or_none(points_lifetime_days, "--points-lifetime-days",
                                               companies.LONGEST_POINTS_LIFETIME_DAYS),
            expiry_reminder_days=_days_or_none(expiry_reminder_days, "--expiry-reminder-days",
                                               companies.LONGEST_EXPIRY_REMINDER_DAYS),
            offline_sale_window_days=offline_sale_window_days)

        summary = (f"accrual {wire.format_percent(program.accrual_bp)}%, max redeem "
                   f"{wire.format_percent(program.max_redeem_bp)}%, delay {program.accrual_delay_days} d, "
                   f"hold {program.hold_ttl_seconds} s, otp {program.enrollment_requires_otp}, "
                   f"clawback {program.clawback_policy}, "
                   f"points lifetime {_days(program.points_lifetime_days)}, "
                   f"expiry reminder {_days(program.expiry_reminder_days)}, offline sales "
                   f"{program.offline_sale_window_days} d, welcome "
                   f"{wire.format_amount(program.welcome_bonus)}, birthday "
                   f"{wire.format_amount(program.birthday_bonus)}, tier window "
                   f"{program.tier_window_days or 'all time'}")
    click.echo(summary)


def _bonus(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        amount = wire.parse_amount(value)
    except ValueError as exc:
        refuse(f"{option}: {exc}")
    if not 0 <= amount <= MAX_AMOUNT:
        refuse(f"{option}: must be between 0 and {wire.format_amount(MAX_AMOUNT)}")
    return amount


def _window(value: str | None):
    if value is None:
        return settings.UNCHANGED
    if value.strip().lower() == "none":
        return None
    if not value.strip().isdigit() or not 1 <= int(value) <= 3650:
        refuse(f'--tier-window-days: a number of days from 1 to 3650, or "none": {value}')
    return int(value)


@subscriptions_cli.command("set")
@click.argument("company_id")
@click.option("--status", type=click.Choice(companies.SUBSCRIPTION_STATUSES),
              help="STOPPED refuses holds and commits")
@click.option("--register-limit", type=click.IntRange(0), help="ACTIVE terminals allowed")
@click.option("--access-until", help="ISO 8601, e.g. 2027-01-31T00:00:00Z")
def subscriptions_set(company_id, status, register_limit, access_until):
    """Change a company's subscription."""
    with operator_session() as session:
        existing_company(session, company_id)
        sub = companies.update_subscription(session, company_id, status=status,
                                            register_limit=register_limit,
                                            access_until=_instant(access_until))
        summary = f"{sub.status}, register limit {sub.register_limit}, until {sub.access_until.isoformat()}"
    click.echo(summary)


@idempotency_cli.command("purge")
def idempotency_purge():
    """Delete idempotency records older than IDEMPOTENCY_TTL, a batch per transaction (the
    periodic job does the same every run)."""
    from app.operations.upkeep import purge_idempotency

    with operator_session() as session:
        count = purge_idempotency(session, utcnow(), most=sys.maxsize)
    click.echo(f"purged {count}")


@click.command("demo")
@with_appcontext
def demo():
    """A demo company with a store published to MINIAPP and a terminal; prints a key with
    every scope. Each run revokes the demo key printed before, and says so on stderr."""
    from app.services.tenancy.demo import create_demo

    with operator_session() as session:
        key, revoked = create_demo(session, pepper=_pepper(), now=utcnow(), actor=audit.operator())
    for prefix in revoked:
        click.echo(f"revoked the earlier demo key {prefix}…: only the key below works now", err=True)
    click.echo(key)

COMMANDS = (db_cli, companies_cli, credentials_cli, programs_cli, subscriptions_cli, idempotency_cli, demo)
