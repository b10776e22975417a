"""Races on PostgreSQL between a change of `tierWindowDays` and the registers: the change locks
the company's accounts while it recomputes them, so a commit or a return that read the program
before it waits for the account and must then count over the new window (CONTRACT §15)."""
from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import select, text, update

from app.db import utcnow
from app.models import RewardAccount
from app.services.program import settings as program_settings
from app.services.rewards import bonuses, ledger
from tests.checkout.conftest import Register, line
from tests.concurrency import delayed_job
from tests.program.helpers import change_program
from tests.program.test_tiers import TIERS, TWO_CUPS, _age_sales, _run_refresh, spend_differences
from worker.periodic import credit_birthdays, mature_rewards

pytestmark = pytest.mark.postgres

WAITING_FOR_A_LOCK = text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                          "AND wait_event_type = 'Lock'")


def _behind_a_window_change(app, shop, window_days: int, call):
    """`call` in a thread of its own while a change of the window is open (the company's
    accounts locked); once `call` waits for a lock, the change commits. What `call` returned."""
    change = app.extensions["session_factory"]()
    result: list = []
    try:
        program_settings.change_program(change, shop.tenant.company_id, now=utcnow(),
                                        tier_window_days=window_days)
        change.flush()
        thread = threading.Thread(target=lambda: result.append(call()))
        thread.start()
        _until_one_waits_for_a_lock(shop)
        change.commit()
    finally:
        change.close()
    thread.join(30)
    return result[0]


def _until_one_waits_for_a_lock(shop) -> None:
    deadline = time.monotonic() + 10
    while shop.arrange(lambda s: s.scalar(WAITING_FOR_A_LOCK)) == 0:
        assert time.monotonic() < deadline, "nothing waited for a lock"
        time.sleep(0.01)


def _stored_spend(shop, customer: str) -> int:
    return shop.arrange(lambda s: s.scalar(select(RewardAccount.spend).where(
        RewardAccount.customer_id == customer)))


def test_a_commit_waiting_for_a_longer_window_counts_over_it(app, shop):
    change_program(app.test_client(), shop.tenant, tiers=TIERS, tierWindowDays=30)
    register = Register(app.test_client(), shop)
    customer = shop.customer()
    register.checkout(customer, TWO_CUPS)
    _age_sales(shop, customer, 100)
    assert _run_refresh(shop) == 1 and _stored_spend(shop, customer) == 0
    session = register.open(customer)
    quote = register.quote(session["id"], [line("1", "100.00")])

    sale = _behind_a_window_change(app, shop, 365, lambda: Register(app.test_client(), shop).commit(
        session["id"], quote["id"]))
    # Over 365 days the old sale counts: Silver's 6 % on this one, and both in the spend.
    assert (sale["lines"][0]["accrualPercent"], sale["accrued"]) == ("6.00", "6.00")
    assert _stored_spend(shop, customer) == 30000
    assert spend_differences(shop) == []


def test_a_return_waiting_for_a_shorter_window_leaves_a_sale_it_no_longer_counts(app, shop):
    change_program(app.test_client(), shop.tenant, tiers=TIERS, tierWindowDays=365)
    register = Register(app.test_client(), shop)
    customer = shop.customer()
    old = register.checkout(customer, TWO_CUPS)["sale"]
    _age_sales(shop, customer, 100)
    register.checkout(customer, [line("1", "100.00")])
    assert _stored_spend(shop, customer) == 29400  # the 6.00 earned on the old one paid part

    _behind_a_window_change(app, shop, 30, lambda: Register(app.test_client(), shop).return_lines(
        old["id"], [("1", "2")]))
    # Over 30 days only the new sale counts; returning the old one takes nothing from it.
    assert _stored_spend(shop, customer) == 9400
    assert spend_differences(shop) == []


@pytest.mark.parametrize(("finder", "task"), [(bonuses, credit_birthdays), (ledger, mature_rewards)],
                         ids=["birthdays", "maturing"])
def test_a_window_change_and_a_periodic_job_lock_accounts_in_one_order(app, shop, monkeypatch,
                                                                     finder, task):
    """The job locks a batch of accounts one by one, the window change all of the company's:
    in the same order (by customer), or each may hold what the other waits for."""
    change_program(app.test_client(), shop.tenant, birthdayBonus="10")
    first, second = shop.customer(), shop.customer()
    while first > second:  # stored and ordered alike, whichever way the change reads them
        first, second = shop.customer(), shop.customer()
    today = bonuses.today(utcnow())
    shop.arrange(lambda s: s.execute(update(RewardAccount).where(
        RewardAccount.company_id == shop.tenant.company_id).values(birthday_due_on=today)))
    # The job's query may find them in any order (here the day of `second` came first).
    monkeypatch.setattr(finder, "accounts_due", lambda session, now, limit: [
        (shop.tenant.company_id, second), (shop.tenant.company_id, first)])
    holds_one, go_on = threading.Event(), threading.Event()
    lock = ledger.lock

    def lock_then_wait(work, company_id, customer_id, now):
        account = lock(work, company_id, customer_id, now)
        if not holds_one.is_set():
            holds_one.set()
            go_on.wait(10)
        return account
    monkeypatch.setattr(ledger, "lock", lock_then_wait)

    window_change = delayed_job(app, lambda s: program_settings.change_program(
        s, shop.tenant.company_id, now=utcnow(), tier_window_days=30).tier_window_days)
    results = {}
    job = threading.Thread(target=lambda: results.update(job=_outcome(
        delayed_job(app, lambda s: task(s, utcnow())))))
    job.start()
    assert holds_one.wait(10)
    change = threading.Thread(target=lambda: results.update(change=_outcome(window_change)))
    change.start()
    _until_one_waits_for_a_lock(shop)  # the change, for the account the job holds
    go_on.set()
    job.join(30)
    change.join(30)
    assert results == {"job": 2, "change": 30}


def _outcome(call):
    try:
        return call()
    except Exception as error:  # the deadlock's loser, for the assertion to show
        return error
