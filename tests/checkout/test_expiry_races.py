"""Races on PostgreSQL of the periodic expiry against the register and the back office on
the same account: whichever locks the account first, the points expire exactly once and the
capture or debit takes what is left."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import LedgerEntry, RewardAccount
from app.services.rewards import upkeep
from tests.checkout.conftest import Register, line
from tests.concurrency import delayed_job, raising, run_together
from tests.lots import age_lots

pytestmark = pytest.mark.postgres


def _job(app, delay: float):
    return delayed_job(app, lambda session: upkeep.expire_due_accounts(session, utcnow(), 10),
                       delay)


def _expired(shop, customer):
    return shop.arrange(lambda s: [amount for (amount,) in s.execute(
        select(LedgerEntry.amount).where(LedgerEntry.company_id == shop.tenant.company_id,
                                         LedgerEntry.customer_id == customer,
                                         LedgerEntry.type == "EXPIRY"))])


def test_the_periodic_expiry_racing_a_capture_expires_once_and_captures_the_hold(app, shop):
    shop.program(points_lifetime_days=1)
    for attempt in range(10):
        customer = shop.customer("100.00")
        register = Register(app.test_client(), shop)
        session, quote, hold = register.held(customer, [line("1", "10.00")])  # 3.00 held
        shop.arrange(lambda s: age_lots(s, shop.tenant.company_id, customer, timedelta(days=2)))
        commit, _ = raising(run_together([
            lambda: register.call("POST", f"/v1/checkout-sessions/{session['id']}/commit",
                                  {"quoteId": quote["id"]}),
            _job(app, delay=attempt * 0.004)]))
        assert commit.status_code == 201 and commit.get_json()["redeemed"] == "3.00"
        assert _expired(shop, customer) == [-9700]  # what the hold reserved was spent, not lost
        assert shop.account(customer) == {"available": "0.35", "pending": "0.00",
                                          "reserved": "0.00"}
    assert shop.verify() == []


def test_the_periodic_expiry_racing_a_debit_expires_once_and_debits_what_is_left(app, shop):
    for attempt in range(10):
        customer = shop.customer("50.00")  # never expires
        register = Register(app.test_client(), shop)
        register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                      {"amount": "100.00", "basis": "promo",
                       "expiresAt": (utcnow() + timedelta(hours=1)).isoformat()},
                      expect=201)
        shop.arrange(lambda s: age_lots(s, shop.tenant.company_id, customer, timedelta(hours=2)))
        debits = [("-30.00", 201), ("-30.00", 409)]  # the second finds 20.00: never the promo
        responses = raising(run_together([
            lambda: [register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                                   {"amount": amount, "basis": "spent"}) for amount, _ in debits],
            _job(app, delay=attempt * 0.004)]))[0]
        assert [r.status_code for r in responses] == [status for _, status in debits]
        assert _expired(shop, customer) == [-10000]
        assert shop.account(customer)["available"] == "20.00"
    assert shop.verify() == []


def _expiry_batch(app):
    """One batch of the periodic expiry in a session of its own, committed."""
    return delayed_job(app, lambda session: upkeep.expire_due_accounts(session, utcnow(), 10))()


def test_an_account_changed_after_the_job_read_it_is_left_to_the_next_batch(app, shop,
                                                                            monkeypatch):
    shop.program(points_lifetime_days=1)
    customer = shop.customer("100.00")
    shop.arrange(lambda s: age_lots(s, shop.tenant.company_id, customer, timedelta(days=2)))
    register = Register(app.test_client(), shop)
    lock_unchanged = upkeep._lock_unchanged

    def a_touch_first(work, worked):
        # Between the job's read and its lock, a credit touches the account: it expires the
        # due lot itself and changes the row's version.
        register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                      {"amount": "10.00", "basis": "promo"}, expect=201)
        return lock_unchanged(work, worked)

    monkeypatch.setattr(upkeep, "_lock_unchanged", a_touch_first)
    assert _expiry_batch(app) == 1  # read, then left out
    monkeypatch.setattr(upkeep, "_lock_unchanged", lock_unchanged)
    assert _expired(shop, customer) == [-10000]  # the touch's expiry, once
    assert len(shop.events("reward.expired")) == 1
    assert shop.account(customer)["available"] == "10.00"
    _expiry_batch(app)  # the next batch reads it afresh: nothing more expires
    assert _expired(shop, customer) == [-10000] and len(shop.events("reward.expired")) == 1
    assert shop.verify() == []


def test_an_account_a_register_holds_is_skipped_not_waited_for(app, shop):
    shop.program(points_lifetime_days=1)
    held, free = shop.customer("100.00"), shop.customer("50.00")
    for customer in (held, free):
        shop.arrange(lambda s, c=customer: age_lots(s, shop.tenant.company_id, c,
                                                    timedelta(days=2)))
    register = app.extensions["engine"].connect()
    transaction = register.begin()
    register.execute(select(RewardAccount).where(
        RewardAccount.company_id == shop.tenant.company_id,
        RewardAccount.customer_id == held).with_for_update())
    batch = threading.Thread(target=lambda: handled.append(_expiry_batch(app)))
    handled: list = []
    try:
        batch.start()
        batch.join(30)
        assert handled == [2], "the job waited for the register's lock"
    finally:
        transaction.rollback()
        register.close()
        batch.join(30)
    assert _expired(shop, held) == [] and _expired(shop, free) == [-5000]
    assert [event["customerId"] for event in shop.events("reward.expired")] == [free]
    assert _expiry_batch(app) == 1 and _expired(shop, held) == [-10000]
    assert shop.verify() == []
