"""Operator commands for running the service: what to check first."""
from __future__ import annotations

import json

import click
from flask import current_app
from flask.cli import AppGroup

from app.database.engine import utcnow
from app.web.monitoring import status

ops_cli = AppGroup("ops", help="Running the service.")


@ops_cli.command("status")
def ops_status():
    """Database and Redis reachable, migrations at head, the worker's heartbeat, the outbox,
    dead letters and idempotency records, as one JSON document on the last line. A service
    that cannot be reached is said so in the document, and the exit status is 1 then, or while
    the migrations are not at head, so a monitor can read the status alone."""
    report = status(current_app._get_current_object(), utcnow())
    click.echo(json.dumps(report, sort_keys=False))
    if not healthy(report):
        click.get_current_context().exit(1)


def healthy(report: dict) -> bool:
    """The database answers, at the code's migrations, and Redis answers when it is set."""
    migrations = report["migrations"] or {}
    redis = report["redis"]
    return (report["database"]["reachable"] and migrations.get("atHead") is True
            and (not redis["configured"] or redis["reachable"] is True))


COMMANDS = (ops_cli,)
