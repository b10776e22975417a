"""The operator's `flask` commands (docs/api.md#operators). Each prints what it made as its last
line, alone, so scripts can read it. One module per area; each exports COMMANDS."""
from __future__ import annotations

from importlib import import_module

from flask import Flask

COMMAND_MODULES = (
    "app.cli.tenants",
    "app.cli.webhooks",
    "app.cli.gift_cards",
    "app.cli.ledger",
    "app.cli.customers",
    "app.cli.ops",
    "app.cli.staff",
)


def register_commands(app: Flask) -> None:
    from app.cli.errors import every_command, plainly

    for module in COMMAND_MODULES:
        for command in import_module(module).COMMANDS:
            for each in every_command(command):
                if each.callback is not None and not getattr(each.callback, "plain", False):
                    each.callback = plainly(each.callback)
                    each.callback.plain = True  # create_app may run more than once
            app.cli.add_command(command)
