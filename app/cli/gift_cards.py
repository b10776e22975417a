"""Operator commands for gift cards: only the operator issues them."""
from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

from app.cli.session import operator_session
from app.cli.tenants import _instant
from app.db import utcnow
from app.services import wire
from app.services.cards import gift_cards
from app.services.errors import NotFound
from app.services.tenancy import companies

gift_cards_cli = AppGroup("gift-cards", help="Gift cards.")


@gift_cards_cli.command("issue")
@click.argument("company_id")
@click.option("--amount", required=True, help='the value of each card, e.g. "1234.56"')
@click.option("--expires-at", help="ISO 8601, e.g. 2027-01-31T00:00:00Z (default: never)")
@click.option("--count", type=click.IntRange(1, gift_cards.MAX_ISSUE_COUNT), default=1,
              show_default=True)
def gift_cards_issue(company_id, amount, expires_at, count):
    """Issue gift cards; prints their codes, one a line, as the last COUNT lines (shown once)."""
    try:
        kopecks = wire.parse_amount(amount)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--amount") from exc
    if kopecks <= 0:
        raise click.BadParameter("must be greater than zero", param_hint="--amount")
    expiry = _instant(expires_at)
    now = utcnow()
    if expiry is not None and expiry <= now:
        raise click.BadParameter("must be in the future", param_hint="--expires-at")
    with operator_session() as session:
        try:
            companies.get_company(session, company_id)
        except NotFound as exc:
            raise click.BadParameter(f"no company {company_id}", param_hint="COMPANY_ID") from exc
        codes = gift_cards.issue_gift_cards(
            session, company_id, amount=kopecks, count=count, expires_at=expiry,
            pepper=current_app.config["SETTINGS"].api_key_pepper, now=now)
    plural = "s" if count != 1 else ""
    click.echo(f"issued {count} gift card{plural} of {wire.format_amount(kopecks)} "
               f"for company {company_id}; the codes are shown only now:")
    for code in codes:
        click.echo(code)


COMMANDS = [gift_cards_cli]
