"""On PostgreSQL the session's move carries more in its statement (statements.StateMove): the
commit's capture of the hold and the account's lock. They must happen only once the session
moved: a commit whose move found another state (or another latest quote) captures nothing."""
import pytest

from app.database.engine import utcnow
from app.services.checkout.statements import COMMITTED_MOVE
from app.services.unit_of_work import UnitOfWork
from tests.checkout.conftest import line

pytestmark = pytest.mark.postgres


def _commit_statement(shop, session_id: str, quote_id: str):
    """The commit's read-and-move statement alone, its transaction rolled back."""
    session = shop.app.extensions["session_factory"]()
    try:
        return UnitOfWork.of(session).run(COMMITTED_MOVE.with_context, {
            "company": shop.tenant.company_id, "session_id": session_id, "quote": quote_id,
            "now": utcnow()}).one()
    finally:
        session.rollback()
        session.close()


def test_the_capture_and_the_lock_come_only_with_the_move(register, shop):
    customer = shop.customer("100.00")
    session, quote, hold = register.held(customer, [line("1", "100.00")])
    requote = register.quote(session["id"], [line("1", "100.00")], expect=409)  # HELD: no quote
    assert requote["code"] == "invalid_state"

    stale = _commit_statement(shop, session["id"], "not-the-latest-quote")
    assert (stale.moved, stale.captured_id, stale.locked_company_id) == (False, None, None)
    assert shop.state(session["id"]) == ("HELD", ["ACTIVE"])

    moved = _commit_statement(shop, session["id"], quote["id"])
    assert (moved.moved, moved.captured_id, moved.captured_amount) == (True, hold["id"], 3000)
    assert moved.locked_customer_id == customer
    assert shop.state(session["id"]) == ("HELD", ["ACTIVE"])  # rolled back: nothing stays
