"""Races on PostgreSQL with real threads, each request through its own test client: holds on
one account never reserve more than was available; a commit racing a release, or the expiry
job, ends the hold exactly one way."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.database.engine import utcnow
from app.models import Hold, LedgerEntry, Sale
from app.services.checkout import holds
from app.wire import parse_amount
from tests.checkout.conftest import Register, line

from tests.concurrency import delayed_job, raising, run_together

pytestmark = pytest.mark.postgres


def _race(*calls):
    """Run the calls at once; their results in order (an exception in one is raised)."""
    return raising(run_together(list(calls)))


def _registers(app, shop, n):
    return [Register(app.test_client(), shop) for _ in range(n)]


def test_fifty_holds_on_one_account_never_reserve_more_than_available(app, shop):
    customer = shop.customer("100.00")
    registers = _registers(app, shop, 50)
    prepared = []
    for i, register in enumerate(registers):
        session = register.open(customer)
        # Quotes of 3.00 to 17.70: each was quoted against the whole 100.00.
        quote = register.quote(session["id"], [line("1", f"{10 + i}.00")])
        prepared.append((register, session["id"], quote["id"], parse_amount(quote["discount"])))

    responses = _race(*[
        (lambda r=r, s=s, q=q: r.call("POST", f"/v1/checkout-sessions/{s}/hold", {"quoteId": q}))
        for r, s, q, _ in prepared])

    held = [amount for (_, _, _, amount), response in zip(prepared, responses)
            if response.status_code == 201]
    refused = [amount for (_, _, _, amount), response in zip(prepared, responses)
               if response.status_code == 409]
    assert len(held) + len(refused) == 50 and held and refused
    assert all(response.get_json()["code"] == "insufficient_balance"
               for response in responses if response.status_code == 409)
    assert sum(held) <= 10000
    balance = shop.account(customer)
    assert parse_amount(balance["reserved"]) == sum(held)
    assert parse_amount(balance["available"]) == 10000 - sum(held)
    # Nothing was refused that would still have fitted: no capacity was lost to the race.
    assert min(refused) > 10000 - sum(held)
    assert shop.verify() == []


def _held_sessions(app, shop, customer, n):
    prepared = []
    for register in _registers(app, shop, n):
        session, quote, hold = register.held(customer, [line("1", "10.00")])
        prepared.append((register, session["id"], quote["id"], hold))
    return prepared


def _hold_states(shop, session_ids):
    def work(session):
        return dict(session.execute(select(Hold.checkout_session_id, Hold.state).where(
            Hold.company_id == shop.tenant.company_id,
            Hold.checkout_session_id.in_(session_ids))).all())
    return shop.arrange(work)


def _redemptions(shop, hold_id):
    return shop.arrange(lambda s: s.scalar(select(func.count()).select_from(LedgerEntry).where(
        LedgerEntry.company_id == shop.tenant.company_id, LedgerEntry.hold_id == hold_id,
        LedgerEntry.type == "REDEMPTION")))


def test_a_commit_racing_a_release_ends_in_exactly_one(app, shop):
    customer = shop.customer("100.00")
    prepared = _held_sessions(app, shop, customer, 10)
    for register, session_id, quote_id, hold in prepared:
        releaser = Register(app.test_client(), shop)
        commit, release = _race(
            lambda: register.call("POST", f"/v1/checkout-sessions/{session_id}/commit",
                                  {"quoteId": quote_id}),
            lambda: releaser.call("DELETE", f"/v1/checkout-sessions/{session_id}/hold", {}))
        state = _hold_states(shop, [session_id])[session_id]
        if state == "CAPTURED":
            assert commit.status_code == 201 and commit.get_json()["redeemed"] == hold["amount"]
            assert (release.status_code, release.get_json()["code"]) == (409, "invalid_state")
            assert _redemptions(shop, hold["id"]) == 1
        else:
            assert state == "RELEASED" and release.status_code == 200
            # The commit then found the session OPEN again: a sale without redemption.
            assert commit.status_code == 201 and commit.get_json()["redeemed"] == "0.00"
            assert _redemptions(shop, hold["id"]) == 0
    assert shop.account(customer)["reserved"] == "0.00"
    assert shop.verify() == []


def _expiry_job(app, now, delay: float = 0.0):
    return delayed_job(app, lambda session: holds.expire_holds(session, now), delay)


def test_a_commit_racing_the_expiry_job_captures_or_expires_never_both(app, shop):
    customer = shop.customer("100.00")
    for attempt in range(10):  # one held session at a time, so each race is about that hold
        [(register, session_id, quote_id, hold)] = _held_sessions(app, shop, customer, 1)
        # The job runs 901 s ahead, past the hold's 900 s; the commit runs now.
        commit, expired = _race(
            lambda: register.call("POST", f"/v1/checkout-sessions/{session_id}/commit",
                                  {"quoteId": quote_id}),
            _expiry_job(app, utcnow() + timedelta(seconds=901), delay=attempt * 0.006))
        assert commit.status_code == 201
        state = _hold_states(shop, [session_id])[session_id]
        expired_events = [e for e in shop.events("checkout.hold.expired") if e["id"] == hold["id"]]
        if state == "CAPTURED":
            assert commit.get_json()["redeemed"] == hold["amount"]
            assert (expired, expired_events) == (0, [])
            assert _redemptions(shop, hold["id"]) == 1
        else:
            assert state == "EXPIRED" and expired == 1 and len(expired_events) == 1
            assert commit.get_json()["redeemed"] == "0.00"
            assert _redemptions(shop, hold["id"]) == 0
    assert shop.account(customer)["reserved"] == "0.00"
    assert shop.verify() == []


def test_a_new_hold_racing_the_job_over_an_expired_one_releases_it_once(app, shop):
    customer = shop.customer("100.00")
    for attempt in range(10):
        [(register, session_id, quote_id, hold)] = _held_sessions(app, shop, customer, 1)
        shop.age_holds(session_id=session_id)
        placed, _ = _race(
            lambda: register.call("POST", f"/v1/checkout-sessions/{session_id}/hold",
                                  {"quoteId": quote_id}),
            _expiry_job(app, utcnow(), delay=attempt * 0.006))
        assert placed.status_code == 201
        assert len([e for e in shop.events("checkout.hold.expired") if e["id"] == hold["id"]]) == 1
        assert shop.state(session_id) == ("HELD", ["EXPIRED", "ACTIVE"])
    # Each session: its old hold EXPIRED once, its new one ACTIVE; 3.00 reserved per session.
    assert shop.account(customer) == {"available": "70.00", "pending": "0.00", "reserved": "30.00"}
    assert shop.verify() == []
    assert shop.arrange(lambda s: s.scalar(select(func.count()).select_from(Sale))) == 0


def test_two_sessions_of_one_receipt_racing_to_commit_make_one_sale(app, shop):
    customer = shop.customer("100.00")
    for attempt in range(5):
        receipt = f"R-RACE-{attempt}"
        first, second = Register(app.test_client(), shop), Register(app.test_client(), shop)
        sessions = [(r, r.open(customer, receipt)) for r in (first, second)]
        quoted = [(r, s["id"], r.quote(s["id"], [line("1", "10.00")])["id"]) for r, s in sessions]
        responses = _race(*[
            (lambda r=r, s=s, q=q: r.call("POST", f"/v1/checkout-sessions/{s}/commit",
                                          {"quoteId": q}))
            for r, s, q in quoted])
        assert sorted(r.status_code for r in responses) == [201, 409]
        [refused] = [r for r in responses if r.status_code == 409]
        assert refused.get_json()["code"] == "receipt_already_committed"
    assert shop.arrange(lambda s: s.scalar(select(func.count()).select_from(Sale))) == 5
    assert shop.verify() == []


def test_one_commit_retried_at_once_with_its_key_makes_one_sale(app, shop):
    customer = shop.customer("100.00")
    [(register, session_id, quote_id, hold)] = _held_sessions(app, shop, customer, 1)
    key = "retry-of-one-commit"
    responses = _race(*[
        (lambda r=Register(app.test_client(), shop): r.call(
            "POST", f"/v1/checkout-sessions/{session_id}/commit", {"quoteId": quote_id}, key=key))
        for _ in range(8)])
    assert {r.status_code for r in responses} <= {201, 409}
    succeeded = [r for r in responses if r.status_code == 201]
    assert succeeded and len({r.get_data() for r in succeeded}) == 1  # every one the same sale
    assert all(r.get_json()["code"] == "idempotency_key_in_use"
               for r in responses if r.status_code == 409)
    assert shop.arrange(lambda s: s.scalar(select(func.count()).select_from(Sale))) == 1
    assert _redemptions(shop, hold["id"]) == 1
    assert shop.verify() == []
