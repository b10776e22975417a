"""Every operator command's bad input: one line on stderr naming what is wrong, exit 2, no
traceback; and one line naming the service and its address when PostgreSQL or Redis cannot
be reached (exit 1). Every option has help text."""
from __future__ import annotations

from dataclasses import replace
from importlib import import_module

import pytest

from redis import Redis

from app import create_app
from app.cli import COMMAND_MODULES
from app.cli.errors import plainly
from testbed.ports import free_port

UNKNOWN = "00000000-0000-4000-8000-000000000000"
BAD_INPUT = [
    (["companies", "create", "  "], "NAME must not be blank"),
    (["credentials", "issue", UNKNOWN, "--name", "till", "--all-scopes"], f"no company {UNKNOWN}"),
    (["credentials", "issue", "{company}", "--name", " ", "--all-scopes"], "--name must not be blank"),
    (["credentials", "issue", "{company}", "--name", "x", "--scopes", "root"], "unknown scopes: root"),
    (["credentials", "issue", "{company}", "--name", "x"], "exactly one of --scopes and --all-scopes"),
    (["credentials", "list", UNKNOWN], f"no company {UNKNOWN}"),
    (["credentials", "rotate", UNKNOWN], f"no credential {UNKNOWN}"),
    (["credentials", "revoke", UNKNOWN], f"no credential {UNKNOWN}"),
    (["programs", "set", UNKNOWN, "--accrual-percent", "5"], f"no company {UNKNOWN}"),
    (["programs", "set", "{company}", "--accrual-percent", "abc"], "--accrual-percent: "),
    (["subscriptions", "set", UNKNOWN, "--status", "ACTIVE"], f"no company {UNKNOWN}"),
    (["subscriptions", "set", "{company}", "--access-until", "soon"], "not an ISO 8601 time"),
    (["ledger", "verify", UNKNOWN], f"no company {UNKNOWN}"),
    (["gift-cards", "issue", UNKNOWN, "--amount", "5"], f"no company {UNKNOWN}"),
    (["gift-cards", "issue", "{company}", "--amount", "5.001"], "--amount: "),
    (["gift-cards", "issue", "{company}", "--amount", "0"], "--amount must be greater than zero"),
    (["customers", "repair-names", UNKNOWN], f"no company {UNKNOWN}"),
    (["webhooks", "allow-host", "https://x.example.com/"], "Error: "),
    (["webhooks", "disallow-host", "never.example.com"], "is not an allowed host"),
    (["webhooks", "replay", UNKNOWN], "has no dead deliveries"),
]


@pytest.mark.parametrize("args, says", BAD_INPUT, ids=[" ".join(a[:2]) + f" #{i}"
                                                       for i, (a, _) in enumerate(BAD_INPUT)])
def test_bad_input_is_one_line_and_exit_2(app, tenant, args, says):
    args = [arg.replace("{company}", tenant.company_id) for arg in args]
    result = app.test_cli_runner().invoke(args=args)
    assert result.exit_code == 2, result.output
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.output


def test_companies_list_shows_every_company(app, tenant, other_tenant):
    lines = app.test_cli_runner().invoke(args=["companies", "list"]).output.splitlines()
    assert lines[-1] == "2 companies"
    assert [line.split("\t")[0] for line in lines[:-1]] == [tenant.company_id, other_tenant.company_id]
    assert lines[0].endswith("\tTest Shop")


def test_a_large_issue_of_gift_cards_reports_its_progress(app, tenant):
    result = app.test_cli_runner().invoke(
        args=["gift-cards", "issue", tenant.company_id, "--amount", "5", "--count", "2500"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == ["issued 1000 of 2500", "issued 2000 of 2500",
                                          "issued 2500 of 2500"]
    assert len(result.stdout.splitlines()) == 2501  # the summary, then every code


def test_an_unreachable_database_is_one_line_naming_it(settings):
    port = free_port()
    database_url = f"postgresql+psycopg2://postgres:secret@127.0.0.1:{port}/x"
    app = create_app(replace(settings, database_url=database_url))
    result = app.test_cli_runner().invoke(args=["companies", "list"])
    assert result.exit_code == 1, result.output
    assert result.stderr.strip().splitlines() == [
        f"Error: cannot reach PostgreSQL at 127.0.0.1:{port}: "
        f"connection to server at \"127.0.0.1\", port {port} failed: Connection refused"]
    assert "Traceback" not in result.output and "secret" not in result.output


def test_an_unreachable_redis_is_one_line_naming_it(settings):
    port = free_port()
    url = f"redis://:secret@127.0.0.1:{port}/0"
    app = create_app(replace(settings, redis_url=url))

    @app.cli.command("ping-queue")
    @plainly
    def ping_queue():
        Redis.from_url(url, socket_connect_timeout=1).ping()

    result = app.test_cli_runner().invoke(args=["ping-queue"])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: cannot reach Redis at 127.0.0.1:{port}: ")
    assert "secret" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _options(command, path):
    for name, sub in getattr(command, "commands", {}).items():
        yield from _options(sub, (*path, name))
    for param in command.params:
        if param.param_type_name == "option" and param.opts[0] != "--help":
            yield " ".join(path), param


def test_every_option_of_every_command_has_help_text():
    ours = [command for module in COMMAND_MODULES for command in import_module(module).COMMANDS]
    options = [found for command in ours for found in _options(command, (command.name,))]
    assert len(options) >= 15
    assert [f"{path} {option.opts[0]}" for path, option in options if not option.help] == []
