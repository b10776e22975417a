"""Properties of the money rules through the checkout services, on random receipts and
random flows (hypothesis): Σ line discounts = discount, nothing negative, no accrual on
excluded items, a full return nets the sale's bonuses to zero (but for what the policy
forgave), and `ledger verify` is clean after every step."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.api.fields import MAX_AMOUNT
from app.database.engine import utcnow
from app.services.checkout import holds, quotes, returns, sales, sessions
from app.services.errors import Conflict
from app.services.rewards.bounds import BALANCE_BOUND
from app.wire import format_amount, parse_amount

# sku → (redeemable, accruable) in the shop's catalog; "FREE" is not in it (both allowed).
CATALOG = {"BREAD": (True, True), "TOBACCO": (False, False), "BOOK": (False, True),
           "GIFT": (True, False)}
SKUS = [*CATALOG, "FREE", None]
PROPERTY = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

receipt_lines = st.lists(
    st.tuples(st.sampled_from(SKUS), st.integers(0, 500_000), st.integers(1, 5)),
    min_size=1, max_size=6)


@pytest.fixture
def shop_with_catalog(shop):
    shop.catalog(CATALOG)
    return shop


def _lines(drawn) -> list[dict]:
    return [{"line_id": f"L{i}", "sku": sku, "name": None, "quantity": units * 1000,
             "price": amount, "amount": amount} for i, (sku, amount, units) in enumerate(drawn)]


def _run(shop, work):
    """One unit of work in its own transaction, as a request would run it."""
    return shop.arrange(work)


def _balance(shop, customer):
    return {name: parse_amount(value) for name, value in shop.account(customer).items()}


def _opened(shop, *, balance: int, policy: str, delay: int, store_id: str | None):
    """A customer with `balance` under a program with `policy` and `delay`, and a checkout
    session of theirs opened now: (customer, session, now)."""
    shop.program(clawback_policy=policy, accrual_delay_days=delay)
    customer = shop.customer(format_amount(balance))
    now = utcnow()
    session = _run(shop, lambda s: sessions.create_session(
        s, shop.tenant.company_id, external_receipt_id=f"R-{customer}", customer_id=customer,
        now=now, ttl_seconds=86400, store_id=store_id))
    return customer, session, now


def _excluded(sku, flag: int) -> bool:
    return sku in CATALOG and not CATALOG[sku][flag]


@PROPERTY
@given(drawn=receipt_lines, balance=st.integers(0, 300_000),
       cap=st.none() | st.integers(0, 300_000))
def test_quote_properties(shop_with_catalog, drawn, balance, cap):
    shop = shop_with_catalog
    customer = shop.customer(format_amount(balance))
    now = utcnow()
    session = _run(shop, lambda s: sessions.create_session(
        s, shop.tenant.company_id, external_receipt_id="R", customer_id=customer, now=now,
        ttl_seconds=86400, store_id=shop.store_id))
    quote = _run(shop, lambda s: quotes.quote_receipt(
        s, shop.tenant.company_id, session.id, lines=_lines(drawn), redeem_amount=cap, now=now))

    assert sum(line.discount for line in quote.lines) == quote.discount
    assert quote.total_amount == sum(amount for _, amount, _ in drawn)
    assert 0 <= quote.discount <= quote.redeemable <= balance
    assert cap is None or quote.discount <= cap
    for (sku, amount, _), line in zip(drawn, quote.lines):
        assert 0 <= line.discount <= line.redeemable <= amount
        assert line.accrual >= 0
        if _excluded(sku, 0):
            assert (line.redeemable, line.discount, line.restriction) == (
                0, 0, "ITEM_NOT_REDEEMABLE")
        if _excluded(sku, 1):
            assert line.accrual == 0
    if quote.allowed:
        assert quote.redeemable == min(sum(line.redeemable for line in quote.lines), balance)
    else:
        assert quote.discount == 0


@PROPERTY
@given(drawn=receipt_lines, balance=st.integers(0, 300_000), data=st.data(),
       policy=st.sampled_from(["UNLIMITED", "WITHIN_BALANCE", "ONLY_PENDING"]),
       delay=st.sampled_from([0, 7]))
def test_random_flows_net_to_zero_and_keep_the_ledger_true(shop_with_catalog, drawn, balance,
                                                           data, policy, delay):
    shop = shop_with_catalog
    company = shop.tenant.company_id
    customer, session, now = _opened(shop, balance=balance, policy=policy, delay=delay,
                                     store_id=shop.store_id)
    lines = _lines(drawn)
    quote = _run(shop, lambda s: quotes.quote_receipt(
        s, company, session.id, lines=lines, redeem_amount=None, now=now))
    held = 0
    if quote.discount and data.draw(st.booleans(), "hold"):
        held = data.draw(st.integers(1, quote.discount), "held")
        _run(shop, lambda s: holds.place_hold(s, company, session.id, quote_id=quote.id,
                                              amount=held, now=now))
        assert _balance(shop, customer)["reserved"] == held
        if data.draw(st.booleans(), "release first"):
            _run(shop, lambda s: holds.release_hold(s, company, session.id, reason=None, now=now))
            held = 0
    assert shop.verify() == []
    sale = _run(shop, lambda s: sales.commit_sale(s, company, session.id, quote_id=quote.id,
                                                  now=now))
    assert sale.redeemed == held
    assert sum(line.discount for line in sale.lines) == held
    for (sku, amount, _), line in zip(drawn, sale.lines):
        assert 0 <= line.discount <= amount and line.accrual >= 0
        assert not (_excluded(sku, 0) and line.discount)
        assert not (_excluded(sku, 1) and line.accrual)
    assert sale.accrued == sum(line.accrual for line in sale.lines)
    assert shop.verify() == []

    forgiven = 0
    left = {line.line_id: line.quantity for line in sale.lines}
    partial_rounds = data.draw(st.integers(0, 3), "partial returns")
    for round_ in range(partial_rounds + 1):
        last = round_ == partial_rounds  # the last return takes everything left
        chosen = sorted(left) if last else data.draw(
            st.lists(st.sampled_from(sorted(left)), min_size=1, unique=True), "lines")
        request = [{"line_id": line_id, "quantity": left[line_id] if last else
                    data.draw(st.integers(1, left[line_id]), "quantity")} for line_id in chosen]
        returned = _run(shop, lambda s: returns.return_lines(s, company, sale.id, lines=request,
                                                             now=now))
        forgiven += returned.forgiven_accrual
        assert returned.restored_redemption >= 0 and returned.reversed_accrual >= 0
        assert returned.balance.available >= 0 and returned.balance.pending >= 0
        for part in request:
            left[part["line_id"]] -= part["quantity"]
            if not left[part["line_id"]]:
                del left[part["line_id"]]
        assert returned.sale_state == ("PARTIALLY_RETURNED" if left else "RETURNED")
        assert shop.verify() == []
        if not left:
            break
    with_returns = _run(shop, lambda s: sales.sale_by_receipt(s, company,
                                                              sale.external_receipt_id))
    assert all(line.returned_quantity == line.quantity for line in with_returns.lines)
    # Everything went back: the customer ends where they began, but for what was forgiven.
    after = _balance(shop, customer)
    assert (after["available"] + after["pending"], after["reserved"]) == (balance + forgiven, 0)
    if policy == "UNLIMITED":
        assert forgiven == 0
    try:  # and nothing more can be returned
        _run(shop, lambda s: returns.return_lines(
            s, company, sale.id, lines=[{"line_id": "L0", "quantity": 1}], now=now))
        raise AssertionError("a return beyond the sale was accepted")
    except Conflict as refused:
        assert refused.code == "return_exceeds_sale"


# Near the bounds (docs/api.md#money): balances a few kopecks under the bound, lines at their most.
near_the_bound = st.integers(0, 5_000).map(lambda gap: BALANCE_BOUND - gap) | st.integers(
    0, BALANCE_BOUND)
largest_lines = st.lists(
    st.tuples(st.sampled_from(SKUS),
              st.integers(MAX_AMOUNT - 5_000, MAX_AMOUNT) | st.integers(0, MAX_AMOUNT),
              st.integers(1, 5)),
    min_size=1, max_size=6)


def _within_the_bound(shop, customer) -> None:
    figures = _balance(shop, customer)
    assert all(abs(value) <= BALANCE_BOUND for value in figures.values()), figures
    assert sum(figures.values()) <= BALANCE_BOUND, figures


@PROPERTY
@given(drawn=largest_lines, balance=near_the_bound, data=st.data(),
       policy=st.sampled_from(["UNLIMITED", "WITHIN_BALANCE", "ONLY_PENDING"]),
       delay=st.sampled_from([0, 7]))
def test_flows_near_the_bound_stay_within_it(shop_with_catalog, drawn, balance, data, policy,
                                             delay):
    shop = shop_with_catalog
    company = shop.tenant.company_id
    customer, session, now = _opened(shop, balance=balance, policy=policy, delay=delay,
                                     store_id=shop.store_id)
    quote = _run(shop, lambda s: quotes.quote_receipt(
        s, company, session.id, lines=_lines(drawn), redeem_amount=None, now=now))
    if quote.discount and data.draw(st.booleans(), "hold"):
        held = data.draw(st.integers(1, quote.discount) | st.just(quote.discount), "held")
        _run(shop, lambda s: holds.place_hold(s, company, session.id, quote_id=quote.id,
                                              amount=held, now=now))
        _within_the_bound(shop, customer)
    sale = _run(shop, lambda s: sales.commit_sale(s, company, session.id, quote_id=quote.id,
                                                  now=now))
    # The accrual is cut, never raised, and the lines still add up to it.
    assert 0 <= sale.accrued <= quote.accrual + sum(line.discount for line in quote.lines)
    assert sale.accrued == sum(line.accrual for line in sale.lines)
    assert all(line.accrual >= 0 for line in sale.lines)
    _within_the_bound(shop, customer)
    assert shop.verify() == []
    request = [{"line_id": line.line_id, "quantity": line.quantity} for line in sale.lines]
    returned = _run(shop, lambda s: returns.return_lines(s, company, sale.id, lines=request,
                                                         now=now))
    assert 0 <= returned.restored_redemption <= sale.redeemed
    assert returned.reversed_accrual + returned.forgiven_accrual == sale.accrued
    _within_the_bound(shop, customer)
    assert shop.verify() == []
