"""Races on PostgreSQL between a change of `tierWindowDays` and the registers: the change moves
the window's version and locks nothing; a commit or a return that read the program before it
and locks the account after it counts over the new window, read with the lock
(docs/api.md#tiers)."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import RewardAccount
from app.services.program import settings as program_settings
from app.services.rewards import ledger
from tests.checkout.conftest import Register, line
from tests.program.helpers import change_program
from tests.program.test_tiers import TIERS, TWO_CUPS, _age_sales, _run_refresh, spend_differences

pytestmark = pytest.mark.postgres


def _change_window(app, shop, window_days: int) -> None:
    session = app.extensions["session_factory"]()
    try:
        program_settings.change_program(session, shop.tenant.company_id, now=utcnow(),
                                        tier_window_days=window_days)
        session.commit()
    finally:
        session.close()


def _window_changes_before_the_lock(app, shop, monkeypatch, window_days: int) -> None:
    """The register's next lock of an account comes just after a change of the window has
    committed: the register read the program before it."""
    lock = ledger.lock

    def change_then_lock(work, company_id, customer_id, now, locked=None):
        assert locked is None, "locked by the read's own statement: no moment between them"
        monkeypatch.setattr(ledger, "lock", lock)
        _change_window(app, shop, window_days)
        return lock(work, company_id, customer_id, now)
    monkeypatch.setattr(ledger, "lock", change_then_lock)


def _stored_spend(shop, customer: str) -> int:
    return shop.arrange(lambda s: s.scalar(select(RewardAccount.spend).where(
        RewardAccount.customer_id == customer)))


def _an_old_sale_out_of_a_30_day_window(app, shop) -> tuple[Register, str]:
    """A customer whose one sale (200.00) is 100 days old, counted out of a 30-day window."""
    change_program(app.test_client(), shop.tenant, tiers=TIERS, tierWindowDays=30)
    register = Register(app.test_client(), shop)
    customer = shop.customer()
    register.checkout(customer, TWO_CUPS)
    _age_sales(shop, customer, 100)
    assert _run_refresh(shop) == 1 and _stored_spend(shop, customer) == 0
    return register, customer


def test_a_commit_that_read_a_shorter_window_counts_over_the_longer_one(app, shop, monkeypatch):
    register, customer = _an_old_sale_out_of_a_30_day_window(app, shop)
    session = register.open(customer)
    quote = register.quote(session["id"], [line("1", "100.00")])

    # The commit reads the session's context, moves it and locks the account in one statement
    # (statements.COMMITTED_MOVE): the change can only come before it, after the quote.
    _change_window(app, shop, 365)
    sale = register.commit(session["id"], quote["id"])
    # Over 365 days the old sale counts: Silver's 6 % on this one, and both in the spend.
    assert (sale["lines"][0]["accrualPercent"], sale["accrued"]) == ("6.00", "6.00")
    assert _stored_spend(shop, customer) == 30000
    assert spend_differences(shop) == []


def test_a_return_that_read_a_longer_window_leaves_a_sale_the_shorter_one_drops(app, shop,
                                                                              monkeypatch):
    change_program(app.test_client(), shop.tenant, tiers=TIERS, tierWindowDays=365)
    register = Register(app.test_client(), shop)
    customer = shop.customer()
    old = register.checkout(customer, TWO_CUPS)["sale"]
    _age_sales(shop, customer, 100)
    register.checkout(customer, [line("1", "100.00")])
    assert _stored_spend(shop, customer) == 29400  # the 6.00 earned on the old one paid part

    _window_changes_before_the_lock(app, shop, monkeypatch, 30)
    register.return_lines(old["id"], [("1", "2")])
    # Over 30 days only the new sale counts; returning the old one takes nothing from it.
    assert _stored_spend(shop, customer) == 9400
    assert spend_differences(shop) == []


def test_a_window_change_waits_for_no_account(app, shop):
    _, customer = _an_old_sale_out_of_a_30_day_window(app, shop)
    holder = app.extensions["engine"].connect()
    transaction = holder.begin()
    holder.execute(select(RewardAccount).where(RewardAccount.customer_id == customer)
                   .with_for_update())  # a register in the middle of a checkout
    change = threading.Thread(target=_change_window, args=(app, shop, 365))
    try:
        change.start()
        change.join(30)
        assert not change.is_alive(), "the window change waited for the customer's account"
    finally:
        transaction.rollback()
        holder.close()
        change.join(30)
    assert _stored_spend(shop, customer) == 0  # recounted later, not by the change
    assert _run_refresh(shop) == 1 and _stored_spend(shop, customer) == 20000
    assert spend_differences(shop) == []

