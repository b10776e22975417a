"""Operator commands for customers."""
from __future__ import annotations

import click
from flask.cli import AppGroup
from sqlalchemy import select

from app.cli.errors import refuse
from app.cli.operator import operator_session
from app.models import Company
from app.services.customers import profiles

customers_cli = AppGroup("customers", help="Customers.")


@customers_cli.command("repair-names")
@click.argument("company_id", required=False)
def repair_names(company_id):
    """Write the directory's name row of every customer without one (of one company, if
    given): customers an older release enrolled during a rolling deploy cannot be found by
    name until then. Prints how many rows were written."""
    with operator_session() as session:
        chosen = select(Company.id)
        if company_id:
            chosen = chosen.where(Company.id == company_id)
        companies = list(session.scalars(chosen))
        if company_id and not companies:
            refuse(f"no company {company_id}")
        repaired = sum(profiles.record_names(session, each) for each in companies)
    click.echo(f"repaired {repaired} name rows")


COMMANDS = (customers_cli,)
