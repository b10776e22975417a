"""How an operator command fails: one line on stderr, never a traceback. Exit 2 for what the
operator typed (an unknown id, a bad value, a blank name), 1 when PostgreSQL or Redis cannot
be reached, naming which and where."""
from __future__ import annotations

import functools
from typing import NoReturn

import click
from flask.cli import ScriptInfo
from redis.exceptions import RedisError
from sqlalchemy.exc import DBAPIError

from app.operations.reach import database_failure, redis_failure
from app.services.errors import DomainError


class Refused(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"Error: {self.message}", err=True)


class Unreachable(Refused):
    exit_code = 1


def refuse(message: str) -> NoReturn:
    raise Refused(message)


def _settings():
    # The command's app context has ended by the time its error arrives here.
    return click.get_current_context().ensure_object(ScriptInfo).load_app().config["SETTINGS"]


def plainly(callback):
    """The command's own failures, as one line each."""
    @functools.wraps(callback)
    def run(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except (DomainError, ValueError) as error:
            raise Refused(str(getattr(error, "detail", error))) from None
        except DBAPIError as error:
            raise Unreachable(database_failure(error, _settings().database_url)) from None
        except RedisError as error:
            raise Unreachable(redis_failure(error, _settings().redis_url)) from None
    return run


def every_command(command: click.Command):
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from every_command(sub)
