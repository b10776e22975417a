"""Units of work outside a request: an operator's command or a job owns its transaction, as a
request does, and hands the events it recorded to delivery once committed."""
from __future__ import annotations

from contextlib import contextmanager

from app.operations.delivery_queue import hand_over_events


@contextmanager
def transaction(app):
    """One unit of work outside a request (an operator command, a job): all of it or
    nothing; the events it recorded go to delivery once committed, as a request's do."""
    session = app.extensions["session_factory"]()
    try:
        yield session
        session.commit()
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()
    hand_over_events(app, session.take_committed_events())
