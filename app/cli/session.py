from flask import current_app

from app.db import transaction


def operator_session():
    """One transaction per command: all of it or nothing."""
    return transaction(current_app._get_current_object())
