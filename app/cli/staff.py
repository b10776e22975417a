"""Operator commands for the back office's staff: add (with a one-time welcome link, or a
password read from standard input), list, remove."""
from __future__ import annotations

import sys

import click
from flask import current_app
from flask.cli import AppGroup

from app.cli.errors import refuse
from app.cli.operator import existing_company, operator_session
from app.database.engine import utcnow
from app.services.audit import events as audit
from app.services.staff import members
from app.services.staff.roles import ROLES

staff_cli = AppGroup("staff", help="Back-office staff.")


@staff_cli.command("add")
@click.argument("email")
@click.option("--company", "company_id", required=True, help="the company's id")
@click.option("--role", required=True, type=click.Choice(ROLES),
              help="what the member may do in the back office (docs/back-office.md)")
@click.option("--name", help="as the portal shows it (default: the email's name part)")
@click.option("--password-stdin", is_flag=True,
              help="set the password read from standard input instead of printing a link")
def staff_add(email, company_id, role, name, password_stdin):
    """Add a member; prints a one-time welcome link (72 h), or with --password-stdin the id."""
    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
    now = utcnow()
    with operator_session() as session:
        existing_company(session, company_id)
        member = members.add_member(session, company_id, email=email, role=role, name=name,
                                    actor=audit.operator(), now=now)
        if password is not None:
            members.set_password(session, member, password)
        else:
            token = members.invite(session, member, now)
        staff_id = member.id
    if password is not None:
        click.echo(staff_id)
    else:
        base = current_app.config["SETTINGS"].public_base_url
        click.echo(f"{base}/portal/welcome/{token}")


@staff_cli.command("list")
@click.argument("company_id")
def staff_list(company_id):
    """A company's staff: id, role, email, name; one a line."""
    with operator_session() as session:
        existing_company(session, company_id)
        for member in members.members(session, company_id):
            state = "" if member.password_hash else "\t(invited)"
            click.echo(f"{member.id}\t{member.role}\t{member.email}\t{member.name}{state}")


@staff_cli.command("remove")
@click.argument("email")
def staff_remove(email):
    """Remove a member; their sessions end at once."""
    with operator_session() as session:
        member = members.by_email(session, email)
        if member is None:
            refuse(f"no staff member {email.strip().lower()}")
        members.remove(session, member, actor=audit.operator(), now=utcnow())
    click.echo(f"removed {email.strip().lower()}")


COMMANDS = [staff_cli]
