"""Operator commands for gift cards: only the operator issues them."""
from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

from app import wire
from app.cli.errors import refuse
from app.cli.operator import existing_company, operator_session
from app.cli.tenants import _instant
from app.database.engine import utcnow
from app.services.cards import gift_cards
from app.services.rewards.bounds import BALANCE_BOUND

gift_cards_cli = AppGroup("gift-cards", help="Gift cards.")
PROGRESS_EVERY = 1000


@gift_cards_cli.command("issue")
@click.argument("company_id")
@click.option("--amount", required=True, help='the value of each card, e.g. "1234.56" '
              f'(at most {wire.format_amount(BALANCE_BOUND)})')
@click.option("--expires-at", help="ISO 8601, e.g. 2027-01-31T00:00:00Z (default: never)")
@click.option("--count", type=click.IntRange(1, gift_cards.MAX_ISSUE_COUNT), default=1,
              show_default=True, help="how many cards (progress goes to stderr)")
def gift_cards_issue(company_id, amount, expires_at, count):
    """Issue gift cards; prints their codes, one a line, as the last COUNT lines (shown once)."""
    try:
        kopecks = wire.parse_amount(amount)
    except ValueError as exc:
        refuse(f"--amount: {exc}")
    if kopecks <= 0:
        refuse("--amount must be greater than zero")
    # a card's balance is bounded as an account's is (docs/api.md#money)
    if kopecks > BALANCE_BOUND:
        refuse(f"--amount must be at most {wire.format_amount(BALANCE_BOUND)}")
    expiry = _instant(expires_at)
    now = utcnow()
    if expiry is not None and expiry <= now:
        refuse("--expires-at must be in the future")
    with operator_session() as session:
        existing_company(session, company_id)
        codes = []
        while len(codes) < count:  # in batches, so a large run shows its progress
            codes += gift_cards.issue_gift_cards(
                session, company_id, amount=kopecks, count=min(PROGRESS_EVERY, count - len(codes)),
                expires_at=expiry, pepper=current_app.config["SETTINGS"].api_key_pepper, now=now)
            if count > PROGRESS_EVERY:
                click.echo(f"issued {len(codes)} of {count}", err=True)
    plural = "s" if count != 1 else ""
    click.echo(f"issued {count} gift card{plural} of {wire.format_amount(kopecks)} "
               f"for company {company_id}; the codes are shown only now:")
    for code in codes:
        click.echo(code)


COMMANDS = [gift_cards_cli]
