"""Whether PostgreSQL and Redis can be reached, said in one line an operator can act on: which
service, and where (host and port, never the user or password)."""
from __future__ import annotations

from urllib.parse import urlsplit

from flask import Flask
from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from app.database.engine import database_unavailable


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def describe_database(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return f"the SQLite database {parsed.database}"
    return f"PostgreSQL at {parsed.host or 'the local socket'}:{parsed.port or 5432}"


def describe_redis(url: str | None) -> str:
    parts = urlsplit(url or "redis://")
    return f"Redis at {parts.hostname or 'localhost'}:{parts.port or 6379}"


def database_failure(error: DBAPIError, url: str) -> str:
    what = "cannot reach" if database_unavailable(error) else "error from"
    return f"{what} {describe_database(url)}: {first_line(error.orig)}"


def redis_failure(error: RedisError, url: str | None) -> str:
    return f"cannot reach {describe_redis(url)}: {first_line(error)}"


def first_unreachable(app: Flask) -> str | None:
    """The one line for the first of PostgreSQL and Redis that does not answer, or None. For
    a process that cannot start without them (the worker)."""
    settings = app.config["SETTINGS"]
    try:
        with app.extensions["engine"].connect() as connection:
            connection.execute(text("SELECT 1"))
    except DBAPIError as error:
        return database_failure(error, settings.database_url)
    if settings.redis_url:
        try:
            Redis.from_url(settings.redis_url, socket_connect_timeout=5, socket_timeout=5).ping()
        except RedisError as error:
            return redis_failure(error, settings.redis_url)
    return None
