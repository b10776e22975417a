"""Points that expire (docs/api.md#expiry), against a plain model: whatever sequence of credits,
debits, holds, captures, releases, returns, expiries and periodic runs an account goes
through, its balances and every lot's remaining agree with the model, and `ledger verify`
finds nothing. The clock is the test's: every service is called with its `now`."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, invariant, precondition, rule,
                                 run_state_machine_as_test)
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import LedgerEntry, RewardLot
from app.services.checkout import holds, quotes, returns, sales, sessions
from app.services.customers import profiles
from app.services.errors import Conflict
from app.services.rewards import accounts, lots, upkeep, verification
from app.services.tenancy import companies

CARDS = "http://127.0.0.1:8000"
phones = (f"+7913{n:07d}" for n in itertools.count(1))
receipts = (f"R-{n}" for n in itertools.count(1))
SESSION_TTL = 90 * 86400  # longer than any run of the machine: 20 steps of at most 50 hours


@dataclass
class ModelLot:
    amount: int
    remaining: int
    expires_at: object
    created_at: object
    sale_id: str | None = None

    def order(self):
        return (self.expires_at is None, self.expires_at or self.created_at, self.created_at)


class Model:
    """docs/api.md#expiry written plainly: lots, a balance, a reservation."""

    def __init__(self):
        self.lots: list[ModelLot] = []
        self.available = self.reserved = 0

    def credit(self, amount, expires_at, now, sale_id=None):
        total = self.available + self.reserved
        remaining = amount if total >= 0 else max(0, total + amount)
        self.lots.append(ModelLot(amount, remaining, expires_at, now, sale_id))
        self.available += amount

    def take(self, amount, own_sale=None):
        """Spend from the lot expiring first (own sale's lot before all); the earliest expiry
        among the lots taken from."""
        amount = min(amount, max(0, self.available + self.reserved))
        ordered = self._open()
        ordered.sort(key=lambda lot: own_sale is None or lot.sale_id != own_sale)
        ends = []
        for lot in ordered:
            part = min(lot.remaining, amount)
            if part:
                lot.remaining -= part
                amount -= part
                ends.append(lot.expires_at)
        return min((end for end in ends if end is not None), default=None)

    def expire(self, now):
        """A due lot loses what the holds' reservation, counted against the lots in spending
        order, leaves uncovered; never more in all than the available balance."""
        left, reserved = max(self.available, 0), self.reserved
        for lot in self._open():
            covered = min(lot.remaining, reserved)
            reserved -= covered
            if lot.expires_at is None or lot.expires_at > now:
                break
            part = min(lot.remaining - covered, left)
            lot.remaining -= part
            left -= part
            self.available -= part

    def expiring(self):
        """(moment, amount) of the next 5 moments something would expire, if the hold were
        captured and nothing else happened."""
        left, reserved, moments = max(self.available, 0), self.reserved, {}
        for lot in self._open():
            covered = min(lot.remaining, reserved)
            reserved -= covered
            if lot.expires_at is not None:
                moments[lot.expires_at] = moments.get(lot.expires_at, 0) + lot.remaining - covered
        found = []
        for moment, amount in sorted(moments.items()):
            part = min(amount, left)
            if part > 0 and len(found) < 5:
                found.append((moment, part))
                left -= part
        return found

    def _open(self):
        return sorted((lot for lot in self.lots if lot.remaining > 0), key=ModelLot.order)


class PointsThatExpire(RuleBasedStateMachine):
    app = None
    company_id = None

    def __init__(self):
        super().__init__()
        self.session = self.app.extensions["session_factory"]()
        self.now = utcnow()
        self.lifetime_days = None
        # Holds here last as long as sessions, days rather than 15 minutes, so that lots fall
        # due under a hold and credits come after it (the held-lot case of docs/api.md#expiry).
        companies.update_program(self.session, self.company_id,
                                 points_lifetime_days=companies.NULL, hold_ttl_seconds=SESSION_TTL)
        self.customer_id = profiles.enrol_customer(
            self.session, self.company_id, phone=next(phones), first_name="Ян",
            public_base_url=CARDS, now=self.now).customer.id
        self.session.commit()
        self.model = Model()
        self.held = None  # (session id, quote id, amount) of the session holding points
        self.sales: list[tuple[str, object]] = []  # (sale id, redemption's earliest end)

    def teardown(self):
        self.session.rollback()
        self.session.close()

    def _tick(self, seconds=1):
        self.now += timedelta(seconds=seconds)
        return self.now

    def _done(self):
        self.session.commit()

    @rule(days=st.one_of(st.none(), st.integers(1, 3)))
    def set_lifetime(self, days):
        companies.update_program(self.session, self.company_id,
                                 points_lifetime_days=companies.NULL if days is None else days)
        self.lifetime_days = days
        self._done()

    @rule(amount=st.integers(1, 50_000), hours=st.one_of(st.none(), st.integers(1, 72)))
    def credit(self, amount, hours):
        now = self._tick()
        self.model.expire(now)
        expires_at = now + timedelta(hours=hours) if hours else None
        accounts.adjust(self.session, self.company_id, self.customer_id, amount=amount,
                        basis="model", now=now, expires_at=expires_at)
        if expires_at is None and self.lifetime_days:
            expires_at = now + timedelta(days=self.lifetime_days)
        self.model.credit(amount, expires_at, now)
        self._done()

    @rule(amount=st.integers(1, 50_000))
    def debit(self, amount):
        now = self._tick()
        self.model.expire(now)
        try:
            accounts.adjust(self.session, self.company_id, self.customer_id, amount=-amount,
                            basis="model", now=now)
        except Conflict:
            assert amount > self.model.available
            self.session.rollback()  # with the expiry its touch made: a read makes it again
            accounts.get_account(self.session, self.company_id, self.customer_id, now)
            self._done()
            return
        self.model.take(amount)
        self.model.available -= amount
        self._done()

    def _open_and_quote(self, amount, now):
        opened = sessions.create_session(self.session, self.company_id,
                                         external_receipt_id=next(receipts),
                                         customer_id=self.customer_id, now=now, ttl_seconds=SESSION_TTL)
        quote = quotes.quote_receipt(self.session, self.company_id, opened.id, lines=[
            {"line_id": "1", "quantity": 1000, "price": amount, "amount": amount}],
            redeem_amount=None, now=now)
        return opened.id, quote

    @precondition(lambda self: self.held is None)
    @rule(amount=st.integers(100, 200_000))
    def hold(self, amount):
        now = self._tick()
        session_id, quote = self._open_and_quote(amount, now)
        self.model.expire(now)
        if not quote.discount:
            self._done()
            return
        held = holds.place_hold(self.session, self.company_id, session_id, quote_id=quote.id,
                                amount=None, now=now)
        self.model.available -= held.amount
        self.model.reserved += held.amount
        self.held = (session_id, quote.id, held.amount)
        self._done()

    @rule(amount=st.integers(100, 200_000))
    def sale_without_hold(self, amount):
        now = self._tick()
        session_id, quote = self._open_and_quote(amount, now)
        self._commit(session_id, quote.id, now, redeemed=0)

    @precondition(lambda self: self.held is not None)
    @rule()
    def capture(self):
        session_id, quote_id, amount = self.held
        self._commit(session_id, quote_id, self._tick(), redeemed=amount)
        self.held = None

    def _commit(self, session_id, quote_id, now, redeemed):
        self.model.expire(now)
        sale = sales.commit_sale(self.session, self.company_id, session_id, quote_id=quote_id,
                                 now=now)
        assert sale.redeemed == redeemed
        end = None
        if redeemed:
            end = self.model.take(redeemed)
            self.model.reserved -= redeemed
        if sale.accrued:
            self.model.credit(sale.accrued, self._lifetime_end(now), now, sale_id=sale.id)
        self.sales.append((sale.id, end))
        self._done()

    def _lifetime_end(self, now):
        return now + timedelta(days=self.lifetime_days) if self.lifetime_days else None

    @precondition(lambda self: self.held is not None)
    @rule()
    def release(self):
        now = self._tick()
        self.model.expire(now)
        holds.release_hold(self.session, self.company_id, self.held[0], reason=None, now=now)
        self.model.available += self.held[2]
        self.model.reserved -= self.held[2]
        self.held = None
        self._done()

    @precondition(lambda self: self.sales)
    @rule(which=st.integers(0, 1000))
    def give_back(self, which):
        sale_id, end = self.sales.pop(which % len(self.sales))
        now = self._tick()
        self.model.expire(now)
        returned = returns.return_lines(self.session, self.company_id, sale_id,
                                        lines=[{"line_id": "1", "quantity": 1000}], now=now)
        if returned.restored_redemption:
            self.model.credit(returned.restored_redemption, end, now)
        if returned.reversed_accrual:  # UNLIMITED: all of it, into debt if need be
            self.model.take(returned.reversed_accrual, own_sale=sale_id)
            self.model.available -= returned.reversed_accrual
        self._done()

    @rule(hours=st.integers(1, 50), by_job=st.booleans())
    def time_passes(self, hours, by_job):
        now = self._tick(hours * 3600)
        self.model.expire(now)
        if by_job:
            while upkeep.expire_due_accounts(self.session, now, limit=10):
                self._done()
        else:
            accounts.get_account(self.session, self.company_id, self.customer_id, now)
        self._done()

    @invariant()
    def agrees_with_the_model(self):
        # A read is a touch: what has come due since the last operation (a restored
        # redemption whose earliest lot had already expired) expires now.
        self.session.expire_all()
        self.model.expire(self.now)
        stored = accounts.get_account(self.session, self.company_id, self.customer_id, self.now)
        self._done()
        assert (stored.available, stored.reserved) == (self.model.available, self.model.reserved)
        if sum(lot.remaining > 0 for lot in self.model.lots) <= lots.LOT_PAGE:  # it reads a page
            shown = accounts.account_standing(self.session, self.company_id, self.customer_id,
                                              self.now).expiring
            assert [(item["expires_at"], item["amount"]) for item in shown] == \
                self.model.expiring()
        stored_lots = self.session.execute(
            select(RewardLot.expires_at, RewardLot.created_at, RewardLot.remaining)
            .where(RewardLot.company_id == self.company_id,
                   RewardLot.customer_id == self.customer_id)).all()
        assert sorted(map(tuple, stored_lots), key=repr) == sorted(
            ((lot.expires_at, lot.created_at, lot.remaining) for lot in self.model.lots), key=repr)
        assert verification.verify(self.session, self.company_id) == []
        self.session.rollback()


@pytest.mark.parametrize("page", [lots.LOT_PAGE, 2])
def test_lots_follow_the_model(app, tenant, monkeypatch, page):
    # A page of 2 makes debits and expiries read past the first page of lots too.
    monkeypatch.setattr(lots, "LOT_PAGE", page)
    PointsThatExpire.app, PointsThatExpire.company_id = app, tenant.company_id
    run_state_machine_as_test(PointsThatExpire, settings=settings(
        max_examples=30, stateful_step_count=20, deadline=None,
        suppress_health_check=list(HealthCheck)))


def test_an_expired_entry_says_why(app, tenant):
    """The EXPIRY entries the model agrees on are ACTIVE, negative and say why."""
    session = app.extensions["session_factory"]()
    now = utcnow()
    customer_id = profiles.enrol_customer(session, tenant.company_id, phone=next(phones),
                                          first_name="Ян", public_base_url=CARDS, now=now).customer.id
    accounts.adjust(session, tenant.company_id, customer_id, amount=500, basis="promo", now=now,
                    expires_at=now + timedelta(hours=1))
    session.commit()
    accounts.get_account(session, tenant.company_id, customer_id, now + timedelta(hours=2))
    session.commit()
    expired = session.execute(select(LedgerEntry.type, LedgerEntry.amount, LedgerEntry.status,
                                     LedgerEntry.basis)
                              .where(LedgerEntry.customer_id == customer_id,
                                     LedgerEntry.type == "EXPIRY")).all()
    assert [tuple(row) for row in expired] == [("EXPIRY", -500, "ACTIVE", "points expired")]
    session.close()
