"""Jobs own their transaction, as requests do: open a session, call a service, commit."""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

from flask import Flask


@lru_cache(maxsize=1)
def worker_app() -> Flask:
    from app import create_app

    return create_app()


@contextmanager
def job_session(app: Flask | None = None):
    app = app or worker_app()
    session = app.extensions["session_factory"]()
    try:
        yield session
        events = session.info.pop("recorded_events", [])
        session.commit()
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()
    if events:  # as a request does: events a job recorded go to delivery once committed
        from app.requests import enqueue_events
        enqueue_events(app, [(event.company_id, event.id) for event in events])
