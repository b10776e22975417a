"""Jobs own their transaction, as requests do: open a session, call a service, commit."""
from __future__ import annotations

from functools import lru_cache

from flask import Flask

from app.operations.work import transaction


@lru_cache(maxsize=1)
def worker_app() -> Flask:
    from app import create_app

    return create_app()


def job_session(app: Flask | None = None):
    return transaction(app or worker_app())
