"""Points that expire at the register (docs/api.md#expiry): a hold's reserved points outlive their
lot while the hold lasts; a capture spends the lot that expires first; a return's restored
redemption expires with the earliest lot it came from; an accrual reversal takes its own
sale's lot first; a credit pays a debt first."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import LedgerEntry, RewardAccount, RewardLot
from app.services.rewards import upkeep
from app.wire import format_timestamp
from tests.checkout.conftest import line
from tests.lots import age_lots, lots_of


def _age(shop, customer, by):
    shop.arrange(lambda s: age_lots(s, shop.tenant.company_id, customer, by))


def _lots(shop, customer):
    return [(amount, remaining) for amount, remaining, _ in
            shop.arrange(lambda s: lots_of(s, shop.tenant.company_id, customer))]


def _read(register, customer):
    response = register.call("GET", f"/v1/customers/{customer}/reward-account")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_reserved_points_outlive_their_lot_while_the_hold_lasts(shop, register):
    shop.program(points_lifetime_days=1)
    customer = shop.customer("100.00")
    session, quote, hold = register.held(customer, [line("1", "10.00")])  # 3.00 held
    _age(shop, customer, timedelta(days=2))
    body = _read(register, customer)
    assert (body["available"], body["reserved"]) == ("0.00", "3.00")  # 97.00 expired
    sale = register.commit(session["id"], quote["id"])
    assert sale["redeemed"] == "3.00"
    assert _lots(shop, customer)[0] == (10000, 0)
    assert shop.account(customer) == {"available": "0.35", "pending": "0.00", "reserved": "0.00"}
    assert shop.verify() == []


def test_what_a_released_hold_kept_expires_at_the_next_touch(shop, register):
    shop.program(points_lifetime_days=1)
    customer = shop.customer("100.00")
    session, _, _ = register.held(customer, [line("1", "10.00")])
    _age(shop, customer, timedelta(days=2))
    assert _read(register, customer)["available"] == "0.00"
    register.release(session["id"])
    body = _read(register, customer)
    assert (body["available"], body["reserved"]) == ("0.00", "0.00")
    assert [event["amount"] for event in shop.events("reward.expired")] == ["-97.00", "-3.00"]
    assert shop.verify() == []


def test_a_capture_spends_the_lot_that_expires_first(shop, register):
    customer = shop.customer("50.00")  # never expires
    register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                  {"amount": "2.00", "basis": "promo",
                   "expiresAt": format_timestamp(utcnow() + timedelta(days=3))}, expect=201)
    register.checkout(customer, [line("1", "10.00")])  # 3.00 redeemed
    assert _lots(shop, customer)[:2] == [(5000, 4900), (200, 0)]
    assert shop.verify() == []


def test_a_restored_redemption_expires_with_the_earliest_lot_it_came_from(shop, register):
    shop.program(points_lifetime_days=30)
    customer = shop.customer("2.00")
    shop.program(points_lifetime_days=90)
    register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                  {"amount": "10.00", "basis": "later"}, expect=201)
    sale = register.checkout(customer, [line("1", "10.00")])["sale"]  # 2.00 + 1.00 redeemed
    first_end = shop.arrange(lambda s: lots_of(s, shop.tenant.company_id, customer))[0][2]
    register.return_lines(sale["id"], [("1", "1")])
    restored = [item for item in register.call(
        "GET", f"/v1/customers/{customer}/reward-activities").get_json()["items"]
        if item["type"] == "REDEMPTION_RESTORE"]
    assert [(item["amount"], item["expiresAt"]) for item in restored] == [
        ("3.00", format_timestamp(first_end))]
    assert shop.verify() == []


def test_an_accrual_reversal_takes_its_own_sales_lot_first(shop, register):
    shop.program(points_lifetime_days=1)
    customer = shop.customer("10.00")  # expires first
    sale = register.checkout(customer, [line("1", "100.00")], hold=False)["sale"]
    assert sale["accrued"] == "5.00"
    register.return_lines(sale["id"], [("1", "1")])
    assert _lots(shop, customer) == [(1000, 1000), (500, 0)]
    assert shop.verify() == []


def test_a_credit_pays_a_debt_first(shop, register):
    customer = shop.customer("0.00")
    sale = register.checkout(customer, [line("1", "100.00")], hold=False)["sale"]
    register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                  {"amount": "-5.00", "basis": "spent"}, expect=201)
    register.return_lines(sale["id"], [("1", "1")])  # UNLIMITED: 5.00 of debt
    assert shop.account(customer)["available"] == "-5.00"
    register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                  {"amount": "8.00", "basis": "goodwill"}, expect=201)
    assert _lots(shop, customer)[-1] == (800, 300)
    assert shop.account(customer)["available"] == "3.00"
    assert shop.verify() == []


def _held_lot_then_credit(shop, register):
    """The held-lot case: 100.00 that expire soon, all of them held; the lot falls due; a
    credit of 50.00 (never expiring) makes the available balance positive."""
    customer = shop.customer()
    register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                  {"amount": "100.00", "basis": "promo",
                   "expiresAt": format_timestamp(utcnow() + timedelta(hours=1))}, expect=201)
    session, quote, hold = register.held(customer, [line("1", "1000.00")])
    assert hold["amount"] == "100.00"
    _age(shop, customer, timedelta(hours=2))
    register.call("POST", f"/v1/customers/{customer}/reward-adjustments",
                  {"amount": "50.00", "basis": "goodwill"}, expect=201)
    return customer, session, quote


def test_a_due_lot_a_hold_covers_expires_nothing_after_a_credit_and_is_captured(shop, register):
    customer, session, quote = _held_lot_then_credit(shop, register)
    body = _read(register, customer)
    assert (body["available"], body["reserved"], body["expiring"]) == ("50.00", "100.00", [])
    # The periodic job does not even pick it: else every batch would, while the hold lasts.
    assert shop.arrange(lambda s: upkeep.expire_due_accounts(s, utcnow(), 10)) == 0
    assert shop.events("reward.expired") == []
    sale = register.commit(session["id"], quote["id"])
    assert sale["redeemed"] == "100.00"
    assert _lots(shop, customer)[:2] == [(10000, 0), (5000, 5000)]  # the held lot was spent
    available = Decimal(_read(register, customer)["available"])
    assert available == Decimal("50.00") + Decimal(sale["accrued"])
    assert shop.events("reward.expired") == []
    assert shop.verify() == []


def test_a_due_lot_a_hold_covered_expires_at_the_next_touch_once_released(shop, register):
    customer, session, _ = _held_lot_then_credit(shop, register)
    assert _read(register, customer)["available"] == "50.00"
    register.release(session["id"])
    body = _read(register, customer)
    assert (body["available"], body["reserved"]) == ("50.00", "0.00")
    assert [event["amount"] for event in shop.events("reward.expired")] == ["-100.00"]
    assert _lots(shop, customer) == [(10000, 0), (5000, 5000)]
    assert shop.verify() == []


def test_verify_reports_a_due_lot_that_expired_under_its_hold(shop, register):
    """What the held-lot case did before: the credit's touch expired 50.00 of the lot the hold
    covers. Balances and lots still add up; only the expiry against the hold shows it."""
    customer, _, _ = _held_lot_then_credit(shop, register)
    assert shop.verify() == []
    now = utcnow()

    def expire_the_held_lot(session):
        held_lot = session.scalar(select(RewardLot).where(
            RewardLot.customer_id == customer, RewardLot.amount == 10000))
        held_lot.remaining -= 5000
        session.add(LedgerEntry(company_id=shop.tenant.company_id, customer_id=customer,
                                type="EXPIRY", amount=-5000, status="ACTIVE", available_at=now,
                                basis="points expired", created_at=now))
        session.execute(update(RewardAccount).where(RewardAccount.customer_id == customer)
                        .values(available=RewardAccount.available - 5000))

    shop.arrange(expire_the_held_lot)
    result = shop.app.test_cli_runner().invoke(args=["ledger", "verify"])
    assert result.exit_code == 1, result.output
    assert (f"{shop.tenant.company_id} {customer} expired at {now.isoformat()} beyond the "
            f"holds: stored 5000, computed 0") in result.output.splitlines()
