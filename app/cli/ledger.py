"""Operator commands for the reward ledger."""
from __future__ import annotations

import click
from flask.cli import AppGroup

from app.cli.operator import existing_company, operator_session
from app.database.engine import utcnow
from app.services.rewards import verification

ledger_cli = AppGroup("ledger", help="The reward ledger.")


@ledger_cli.command("verify")
@click.argument("company_id", required=False)
@click.option("--batch", type=click.IntRange(1), default=verification.VERIFY_BATCH,
              show_default=True, help="accounts per query; progress goes to stderr after each")
def ledger_verify(company_id, batch):
    """Recompute every account (of one company, if given) from its entries and holds, and
    its tier spend from the sales; print each difference; exit 1 when there is any."""
    with operator_session() as session:
        if company_id:
            existing_company(session, company_id)
        total = verification.count_accounts(session, company_id)

        def progress(done: int) -> None:
            click.echo(f"verified {done} of {total} accounts", err=True)

        differences = verification.verify(session, company_id, batch=batch,
                                          progress=progress if total > batch else None)
        differences += verification.verify_spend(session, utcnow(), company_id)
        checked = total
    for difference in differences:
        click.echo(str(difference))
    click.echo(f"{len(differences)} differences in {checked} accounts")
    if differences:
        raise SystemExit(1)


COMMANDS = (ledger_cli,)
