from contextlib import contextmanager

from flask import current_app


@contextmanager
def operator_session():
    """One transaction per command: all of it or nothing."""
    session = current_app.extensions["session_factory"]()
    try:
        yield session
        session.commit()
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()
