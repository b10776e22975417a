"""The suite's side of the Wallet routes: an app held to the interface document, and a pass
settled in an earlier second (the phone itself is testbed/phone.py)."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from app.database.engine import utcnow
from app.models import RewardAccount
from tests.conftest import _APPS
from tests.documented_errors import record_error_answers


def checked(app):
    """The app's error answers are held to the interface document, as the suite's own are."""
    record_error_answers(app)
    _APPS.append(app)
    return app


def settled(db, customer, seconds: float = 10) -> None:
    """The customer's pass last changed `seconds` ago: a change the test makes now falls in a
    later second, which a Last-Modified (whole seconds) can tell from it."""
    db.execute(update(RewardAccount).where(
        RewardAccount.company_id == customer.company_id, RewardAccount.customer_id == customer.id)
        .values(updated_at=utcnow() - timedelta(seconds=seconds)))
    db.commit()
