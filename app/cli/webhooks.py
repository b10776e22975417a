"""Operator commands for webhooks: the host allow-list and the dead letters."""
from __future__ import annotations

import sys
from datetime import timedelta

import click
from flask import current_app
from flask.cli import AppGroup

from app.cli.errors import refuse
from app.cli.operator import operator_session
from app.database.engine import utcnow
from app.operations.delivery_queue import enqueue_deliveries
from app.services.audit import events as audit
from app.services.errors import NotFound
from app.services.operations import retention
from app.services.webhooks import endpoints, history
from app.operations.upkeep import in_batches

webhooks_cli = AppGroup("webhooks", help="Webhook hosts and dead letters.")


def _host(value: str) -> str:
    try:
        return endpoints.normalise_host(value)
    except ValueError as exc:
        refuse(str(exc))


@webhooks_cli.command("allow-host")
@click.argument("host")
def allow_host(host):
    """Allow endpoints on HOST (any port); prints the host as stored. IP literals of private,
    loopback, link-local or metadata ranges are refused (unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES
    is on, for tests), as are IPv4 addresses written in a shortened or numeric form."""
    host = _host(host)
    if endpoints.internal_address(host) and \
            not current_app.config["SETTINGS"].webhook_allow_private_addresses:
        refuse(f"{host} is an internal address (private, loopback, link-local or reserved); "
                "webhooks may not target it")
    with operator_session() as session:
        stored = endpoints.allow_host(session, host, now=utcnow())
    click.echo(stored)


@webhooks_cli.command("disallow-host")
@click.argument("host")
def disallow_host(host):
    """Stop deliveries to HOST and refuse new endpoints on it."""
    with operator_session() as session:
        if not endpoints.disallow_host(session, _host(host)):
            refuse(f"{host} is not an allowed host")
    click.echo(f"disallowed {_host(host)}")


@webhooks_cli.command("hosts")
def hosts():
    """List the allowed hosts."""
    with operator_session() as session:
        rows = endpoints.allowed_hosts(session)
    for row in rows:
        click.echo(row.host)
    click.echo(f"{len(rows)} hosts")


@webhooks_cli.command("dead-letters")
@click.option("--company", "company_id", help="only this company's")
@click.option("--limit", type=click.IntRange(1), default=100, show_default=True,
              help="at most this many lines")
def dead_letters(company_id, limit):
    """Dead deliveries, newest event first: event id, type, company, endpoint, url, attempts,
    last status, last error."""
    with operator_session() as session:
        rows = history.dead_letters(session, company_id=company_id, limit=limit)
    for d in rows:
        click.echo("\t".join([d.event_id, d.event_type, d.company_id, d.endpoint_id, d.url,
                              str(d.attempts), str(d.last_status or "-"), d.last_error or ""]))
    click.echo(f"{len(rows)} dead deliveries")


@webhooks_cli.command("replay")
@click.argument("event_id")
def replay(event_id):
    """Send EVENT_ID's dead deliveries again, each with a fresh retry schedule, whichever
    company's it is."""
    with operator_session() as session:
        try:
            revived, skipped = history.replay_event(session, event_id, now=utcnow(),
                                                   actor=audit.operator())
        except NotFound:
            refuse(f"event {event_id} has no dead deliveries")
    # After the commit: the job must find the delivery PENDING. Without Redis the sweep sends it.
    enqueue_deliveries(current_app.config["SETTINGS"], revived)
    if skipped:
        click.echo(f"{skipped} left dead: their endpoint is disabled or deleted")
    click.echo(f"replaying {len(revived)} deliveries")


@webhooks_cli.command("purge-dead")
@click.option("--older-than", "days", type=click.IntRange(0), required=True,
              help="dead letters of events recorded more than DAYS days ago")
def purge_dead(days):
    """Give up on old dead letters: delete them, a batch per transaction."""
    before = utcnow() - timedelta(days=days)
    with operator_session() as session:
        purged = in_batches(session, lambda limit: retention.purge_dead_letters(
            session, before=before, limit=limit), most=sys.maxsize)
    click.echo(f"purged {purged} dead deliveries")


COMMANDS = [webhooks_cli]
