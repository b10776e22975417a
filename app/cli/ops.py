"""Operator commands for running the service: what to check first."""
from __future__ import annotations

import json

import click
from flask import current_app
from flask.cli import AppGroup

from app.db import utcnow
from app.web.monitoring import status

ops_cli = AppGroup("ops", help="Running the service.")


@ops_cli.command("status")
def ops_status():
    """Database and Redis reachable, migrations at head, the worker's heartbeat, the outbox,
    dead letters and idempotency records, as one JSON document on the last line. A service
    that cannot be reached is said so in the document."""
    click.echo(json.dumps(status(current_app._get_current_object(), utcnow()), sort_keys=False))


COMMANDS = (ops_cli,)
