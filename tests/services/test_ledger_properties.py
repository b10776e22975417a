"""Whatever sequence of credits, debits and pending accruals (maturing or not) an account
goes through, the stored balances agree with the ledger and with a plain model of it."""
from __future__ import annotations

import itertools
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from app.database.engine import utcnow
from app.models import LedgerEntry, RewardAccount
from app.services.customers import profiles
from app.services.errors import Conflict
from app.services.rewards import accounts, ledger, verification
from app.services.unit_of_work import UnitOfWork

CARDS = "http://127.0.0.1:8000"  # where card links point

amounts = st.integers(min_value=1, max_value=100_000)
operations = st.lists(st.one_of(
    st.tuples(st.just("credit"), amounts),
    st.tuples(st.just("debit"), amounts),
    st.tuples(st.just("accrue"), amounts),   # PENDING for a day
    st.tuples(st.just("mature"), st.just(0)),  # every pending entry comes due, then a touch
    st.tuples(st.just("sweep"), st.just(0)),   # ... or the periodic job finds it
), min_size=1, max_size=25)
phones = (f"+7912{n:07d}" for n in itertools.count(1))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
def test_any_sequence_leaves_the_ledger_consistent(app, tenant, steps):
    session = app.extensions["session_factory"]()
    company_id = tenant.company_id
    customer_id = profiles.enrol_customer(session, company_id, phone=next(phones), first_name="Ян",
                                          public_base_url=CARDS, now=utcnow()).customer.id
    session.commit()
    available = pending = 0
    try:
        for action, amount in steps:
            now = utcnow()
            if action == "credit":
                accounts.adjust(session, company_id, customer_id, amount=amount, basis="p", now=now)
                available += amount
            elif action == "debit":
                try:
                    accounts.adjust(session, company_id, customer_id, amount=-amount, basis="p", now=now)
                except Conflict:
                    assert amount > available
                    session.rollback()
                    continue
                assert amount <= available
                available -= amount
            elif action == "accrue":
                account = ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
                ledger.post(account, type="ACCRUAL", amount=amount, now=now,
                            status="PENDING", available_at=now + timedelta(days=1))
                pending += amount
            else:
                past = now - timedelta(seconds=1)
                session.execute(update(LedgerEntry).where(
                    LedgerEntry.company_id == company_id, LedgerEntry.customer_id == customer_id,
                    LedgerEntry.status == "PENDING").values(available_at=past))
                session.execute(update(RewardAccount).where(
                    RewardAccount.company_id == company_id, RewardAccount.customer_id == customer_id,
                    RewardAccount.next_maturity_at.is_not(None)).values(next_maturity_at=past))
                if action == "mature":
                    ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
                else:
                    for due_company, due_customer in ledger.accounts_due(session, now):
                        ledger.lock(UnitOfWork.of(session), due_company, due_customer, now)
                available, pending = available + pending, 0
            session.commit()
        account = accounts.get_account(session, company_id, customer_id, utcnow())
        assert (account.available, account.pending, account.reserved) == (available, pending, 0)
        assert verification.verify(session, company_id) == []
    finally:
        session.rollback()
        session.close()
