import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.services.checkout.pricing import (
    ITEM_NOT_REDEEMABLE,
    Clawback,
    PricedLine,
    ReceiptLine,
    clawback,
    cut_accrual,
    line_redeemable,
    price_commit,
    price_receipt,
    return_share,
    spread,
)

# The demo program: 30 % may be paid with bonuses, 5 % comes back as bonuses.
DEMO = {"max_redeem_bp": 3000, "accrual_bp": 500}


def quote(lines, *, available=10**9, redeem_cap=None, redemption_allowed=True, **program):
    return price_receipt(
        lines,
        **(program or DEMO),
        available=available,
        redeem_cap=redeem_cap,
        redemption_allowed=redemption_allowed,
    )


def discounts(priced):
    return [line.discount for line in priced.lines]


def accruals(priced):
    return [line.accrual for line in priced.lines]


# --- line_redeemable, spread ------------------------------------------------


def test_line_redeemable_rounds_down():
    assert line_redeemable(333, 3000, True) == 99  # 99.9
    assert line_redeemable(1001, 3000, True) == 300  # 300.3
    assert line_redeemable(1000, 10000, True) == 1000
    assert line_redeemable(1000, 0, True) == 0


def test_line_redeemable_of_an_excluded_item_is_zero():
    assert line_redeemable(1000, 3000, False) == 0


def test_spread_gives_leftover_to_largest_remainders():
    # 100 × (99, 300, 17) / 416 = 23 r332, 72 r48, 4 r36; one kopeck left → the first.
    assert spread(100, [99, 300, 17]) == [24, 72, 4]


def test_spread_three_way_tie_goes_to_the_earlier_lines():
    assert spread(100, [50, 50, 50]) == [34, 33, 33]  # 33 r50 each
    assert spread(2, [5, 5, 5]) == [1, 1, 0]
    # Ties between later lines also go in request order: 1 × (1, 3, 3) / 7 = r1, r3, r3.
    assert spread(1, [1, 3, 3]) == [0, 1, 0]


def test_spread_edges():
    assert spread(0, [5, 0, 7]) == [0, 0, 0]
    assert spread(12, [5, 0, 7]) == [5, 0, 7]
    assert spread(0, []) == []
    assert spread(0, [0, 0]) == [0, 0]


@pytest.mark.parametrize(
    ("total", "weights"), [(13, [5, 7]), (1, []), (1, [0, 0]), (-1, [5]), (1, [3, -1])]
)
def test_spread_refuses_what_cannot_be_spread(total, weights):
    with pytest.raises(ValueError):
        spread(total, weights)


# --- hand-worked quotes -----------------------------------------------------


def test_odd_kopecks_capped_by_balance():
    lines = [ReceiptLine("a", 333), ReceiptLine("b", 1001), ReceiptLine("c", 57)]
    priced = quote(lines, available=100)
    # redeemable 99 + 300 + 17 = 416, the balance of 100 is all that can go.
    assert [line.redeemable for line in priced.lines] == [99, 300, 17]
    assert priced.redeemable == 100
    assert priced.discount == 100
    assert discounts(priced) == [24, 72, 4]
    # accrual: 309 × 5 % = 15.45, 929 × 5 % = 46.45, 53 × 5 % = 2.65
    assert accruals(priced) == [15, 46, 2]
    assert priced.accrual == 63
    assert priced.total_amount == 1391
    assert all(line.restriction is None for line in priced.lines)


def test_excluded_line_takes_no_discount_and_says_why():
    lines = [ReceiptLine("a", 1000), ReceiptLine("b", 500, redeemable_item=False)]
    priced = quote(lines)
    assert priced.lines == (
        PricedLine("a", 1000, redeemable=300, discount=300, accrual=35, restriction=None,
                   accrual_bp=500),
        PricedLine("b", 500, redeemable=0, discount=0, accrual=25, restriction=ITEM_NOT_REDEEMABLE,
                   accrual_bp=500),
    )
    assert (priced.redeemable, priced.discount, priced.accrual) == (300, 300, 60)


def test_non_accruable_line_earns_nothing_but_is_still_redeemable():
    lines = [ReceiptLine("a", 1000, accruable_item=False), ReceiptLine("b", 999)]
    priced = quote(lines, max_redeem_bp=1000, accrual_bp=300)
    assert discounts(priced) == [100, 99]
    # b: (999 − 99) × 3 % = 27
    assert accruals(priced) == [0, 27]
    assert (priced.discount, priced.accrual) == (199, 27)


def test_capped_by_redeem_amount():
    lines = [ReceiptLine("a", 2000), ReceiptLine("b", 1000)]
    priced = quote(lines, available=1200, redeem_cap=301, max_redeem_bp=5000, accrual_bp=100)
    # Σ redeemable 1500, balance 1200: the receipt could take 1200, the cashier asks 301.
    assert priced.redeemable == 1200
    assert priced.discount == 301
    # 301 × (1000, 500) / 1500 = 200 r1000, 100 r500
    assert discounts(priced) == [201, 100]
    # (1799 × 1 %, 900 × 1 %)
    assert accruals(priced) == [17, 9]


def test_redeem_cap_above_balance_is_capped_by_balance():
    lines = [ReceiptLine("a", 2000), ReceiptLine("b", 1000)]
    priced = quote(lines, available=1200, redeem_cap=5000, max_redeem_bp=5000, accrual_bp=100)
    assert priced.discount == 1200
    assert discounts(priced) == [800, 400]


def test_redeem_cap_zero_redeems_nothing():
    priced = quote([ReceiptLine("a", 1000)], redeem_cap=0)
    assert (priced.redeemable, priced.discount, priced.accrual) == (300, 0, 50)


def test_three_way_tie_in_remainders():
    lines = [ReceiptLine(f"l{i}", 1000) for i in range(3)]
    priced = quote(lines, available=200)
    # 200 × 300 / 900 = 66 r600 on every line; two kopecks left go to the first two.
    assert discounts(priced) == [67, 67, 66]
    # 933 × 5 % = 46.65, 934 × 5 % = 46.7
    assert accruals(priced) == [46, 46, 46]


def test_redemption_not_allowed_still_accrues():
    lines = [ReceiptLine("a", 1000), ReceiptLine("b", 333)]
    priced = quote(lines, available=5000, redemption_allowed=False)
    assert [line.redeemable for line in priced.lines] == [300, 99]
    assert (priced.redeemable, priced.discount) == (0, 0)
    assert discounts(priced) == [0, 0]
    # full amounts: 50, 16.65
    assert accruals(priced) == [50, 16]
    assert priced.accrual == 66


@pytest.mark.parametrize("available", [0, -500])
def test_no_positive_balance_redeems_nothing(available):
    priced = quote([ReceiptLine("a", 1000)], available=available)
    assert (priced.redeemable, priced.discount, priced.accrual) == (0, 0, 50)


def test_empty_and_zero_amount_receipts():
    assert quote([]) == quote([], available=0)
    priced = quote([ReceiptLine("a", 0)])
    assert (priced.total_amount, priced.redeemable, priced.discount, priced.accrual) == (0, 0, 0, 0)


def test_invalid_inputs_are_refused():
    with pytest.raises(ValueError):
        ReceiptLine("a", -1)
    with pytest.raises(ValueError):
        quote([ReceiptLine("a", 100)], redeem_cap=-1)
    with pytest.raises(ValueError):
        quote([ReceiptLine("a", 100)], max_redeem_bp=10001, accrual_bp=0)
    with pytest.raises(ValueError):
        quote([ReceiptLine("a", 100)], max_redeem_bp=0, accrual_bp=-1)


# --- commit -------------------------------------------------------------------


def test_commit_spreads_the_held_amount_like_the_quote():
    lines = [ReceiptLine("a", 333), ReceiptLine("b", 1001), ReceiptLine("c", 57)]
    sale = price_commit(lines, **DEMO, redeemed=100)
    assert discounts(sale) == [24, 72, 4]
    assert accruals(sale) == [15, 46, 2]
    assert (sale.discount, sale.accrual, sale.redeemable) == (100, 63, 416)


def test_commit_without_hold_redeems_nothing():
    sale = price_commit([ReceiptLine("a", 1000)], **DEMO, redeemed=0)
    assert (sale.discount, sale.accrual) == (0, 50)


@pytest.mark.parametrize("redeemed", [301, -1])
def test_commit_refuses_more_than_the_receipt_can_take(redeemed):
    with pytest.raises(ValueError):
        price_commit([ReceiptLine("a", 1000)], **DEMO, redeemed=redeemed)


# --- returns ------------------------------------------------------------------


def test_partial_returns_round_down_and_the_last_takes_the_rest():
    # 100 kopecks over 3 units, returned one at a time: 33, 33, then 100 − 66.
    assert return_share(100, 3000, 0, 1000, 0) == 33
    assert return_share(100, 3000, 1000, 1000, 33) == 33
    assert return_share(100, 3000, 2000, 1000, 66) == 34


def test_a_whole_line_returned_at_once_gives_back_everything():
    assert return_share(77, 1250, 0, 1250, 0) == 77


@pytest.mark.parametrize(
    "args",
    [
        (100, 3000, 2000, 1001, 66),  # beyond the sale
        (100, 3000, 3000, 1, 100),  # on a fully returned line
        (100, 3000, 0, 0, 0),  # nothing returned
        (100, 0, 0, 1, 0),
        (100, 3000, 0, 1000, 101),  # took more than the value
    ],
)
def test_return_share_refuses_impossible_returns(args):
    with pytest.raises(ValueError):
        return_share(*args)


# --- clawback -----------------------------------------------------------------


def test_pending_is_cancelled_first():
    for policy in ("UNLIMITED", "WITHIN_BALANCE", "ONLY_PENDING"):
        assert clawback(policy, 30, 50, -100) == Clawback(30, 0, 0)


def test_unlimited_may_leave_a_debt():
    assert clawback("UNLIMITED", 100, 30, 20) == Clawback(30, 70, 0)


def test_within_balance_stops_at_zero_and_forgives_the_rest():
    assert clawback("WITHIN_BALANCE", 100, 30, 20) == Clawback(30, 20, 50)
    assert clawback("WITHIN_BALANCE", 100, 30, -5) == Clawback(30, 0, 70)
    assert clawback("WITHIN_BALANCE", 100, 30, 500) == Clawback(30, 70, 0)


def test_only_pending_forgives_what_is_already_active():
    assert clawback("ONLY_PENDING", 100, 30, 500) == Clawback(30, 0, 70)


def test_clawback_refuses_unknown_policy_and_negative_amounts():
    with pytest.raises(ValueError, match="policy"):
        clawback("unlimited", 0, 0, 0)
    with pytest.raises(ValueError):
        clawback("UNLIMITED", -1, 0, 0)
    with pytest.raises(ValueError):
        clawback("UNLIMITED", 1, -1, 0)


# --- properties -----------------------------------------------------------------

kopecks = st.integers(min_value=0, max_value=10**12)
receipt_lines = st.lists(
    st.builds(
        ReceiptLine,
        line_id=st.uuids().map(str),
        amount=st.one_of(st.integers(min_value=0, max_value=10_000), kopecks),
        redeemable_item=st.booleans(),
        accruable_item=st.booleans(),
    ),
    max_size=12,
)
basis_points = st.integers(min_value=0, max_value=10_000)


@given(
    lines=receipt_lines,
    max_redeem_bp=basis_points,
    accrual_bp=basis_points,
    available=st.integers(min_value=-(10**6), max_value=10**12),
    redeem_cap=st.none() | kopecks,
    redemption_allowed=st.booleans(),
)
def test_quote_invariants(
    lines, max_redeem_bp, accrual_bp, available, redeem_cap, redemption_allowed
):
    priced = price_receipt(
        lines,
        max_redeem_bp=max_redeem_bp,
        accrual_bp=accrual_bp,
        available=available,
        redeem_cap=redeem_cap,
        redemption_allowed=redemption_allowed,
    )
    assert sum(discounts(priced)) == priced.discount
    assert sum(accruals(priced)) == priced.accrual
    assert priced.total_amount == sum(line.amount for line in lines)
    assert priced.discount <= priced.redeemable <= sum(line.redeemable for line in priced.lines)
    assert priced.discount <= max(available, 0)
    if redeem_cap is not None:
        assert priced.discount <= redeem_cap
    if not redemption_allowed:
        assert priced.redeemable == priced.discount == 0
    for line, out in zip(lines, priced.lines):
        assert out.line_id == line.line_id
        assert min(out.amount, out.redeemable, out.discount, out.accrual) >= 0
        assert out.discount <= out.redeemable <= out.amount
        if not line.accruable_item:
            assert out.accrual == 0
        if not line.redeemable_item:
            assert out.redeemable == out.discount == 0
            assert out.restriction == ITEM_NOT_REDEEMABLE
    # The quote takes as much as it may: nothing below the smallest cap.
    if redemption_allowed and available > 0:
        caps = [sum(line.redeemable for line in priced.lines), available]
        if redeem_cap is not None:
            caps.append(redeem_cap)
        assert priced.discount == min(caps)


@given(lines=receipt_lines, max_redeem_bp=basis_points, accrual_bp=basis_points, data=st.data())
def test_commit_of_the_quoted_discount_matches_the_quote(lines, max_redeem_bp, accrual_bp, data):
    total = sum(
        line_redeemable(line.amount, max_redeem_bp, line.redeemable_item) for line in lines
    )
    held = data.draw(st.integers(min_value=0, max_value=total))
    program = {"max_redeem_bp": max_redeem_bp, "accrual_bp": accrual_bp}
    sale = price_commit(lines, **program, redeemed=held)
    priced = price_receipt(
        lines, **program, available=held, redeem_cap=None, redemption_allowed=True
    )
    assert sale.lines == priced.lines
    assert sale.discount == held


@given(data=st.data())
def test_spread_parts_are_proportional_and_exact(data):
    weights = data.draw(st.lists(st.integers(min_value=0, max_value=10**9), max_size=15))
    total = data.draw(st.integers(min_value=0, max_value=sum(weights)))
    parts = spread(total, weights)
    assert sum(parts) == total
    weight_sum = sum(weights)
    for part, weight in zip(parts, weights):
        assert 0 <= part <= weight
        floor = total * weight // weight_sum if weight_sum else 0
        assert part in (floor, floor + 1)


@given(
    value=kopecks,
    sold=st.integers(min_value=1, max_value=10**7),
    data=st.data(),
)
def test_repeated_partial_returns_sum_to_the_value(value, sold, data):
    cuts = data.draw(
        st.lists(st.integers(min_value=1, max_value=max(sold - 1, 1)), max_size=10, unique=True)
    )
    bounds = [0, *sorted(c for c in cuts if c < sold), sold]
    returned = taken = 0
    for start, end in zip(bounds, bounds[1:]):
        share = return_share(value, sold, returned, end - start, taken)
        assert 0 <= share <= value
        returned += end - start
        taken += share
    assert returned == sold
    assert taken == value


@given(
    policy=st.sampled_from(["UNLIMITED", "WITHIN_BALANCE", "ONLY_PENDING"]),
    reversed_accrual=kopecks,
    pending_left=kopecks,
    available=st.integers(min_value=-(10**12), max_value=10**12),
)
def test_clawback_parts_sum_and_respect_policy(policy, reversed_accrual, pending_left, available):
    parts = clawback(policy, reversed_accrual, pending_left, available)
    assert parts.from_pending + parts.from_available + parts.forgiven == reversed_accrual
    assert min(parts.from_pending, parts.from_available, parts.forgiven) >= 0
    assert parts.from_pending == min(reversed_accrual, pending_left)
    if policy == "UNLIMITED":
        assert parts.forgiven == 0
    elif policy == "WITHIN_BALANCE":
        assert parts.from_available <= max(available, 0)
        if parts.forgiven:
            assert parts.from_available == max(available, 0)
    else:
        assert parts.from_available == 0


# Near the bounds (docs/api.md#money): lines at a receipt line's most, a thousand of them at most.
BOUND = 10**15
largest_lines = st.lists(
    st.builds(ReceiptLine, line_id=st.uuids().map(str),
              amount=st.integers(10**13 - 100, 10**13) | st.integers(0, 10**13),
              accruable_item=st.booleans()),
    min_size=1, max_size=100)


@given(lines=largest_lines, accrual_bp=basis_points,
       room=st.integers(-5, 5) | st.integers(0, BOUND) | st.integers(BOUND - 100, BOUND))
def test_a_cut_accrual_stays_within_the_room_and_adds_up(lines, accrual_bp, room):
    priced = price_commit(lines, max_redeem_bp=3000, accrual_bp=accrual_bp, redeemed=0)
    cut = cut_accrual(priced, room)
    assert cut.accrual == min(priced.accrual, max(room, 0))
    assert sum(accruals(cut)) == cut.accrual
    for before, after in zip(priced.lines, cut.lines):
        assert 0 <= after.accrual <= before.accrual
        assert (after.line_id, after.discount, after.amount) == (
            before.line_id, before.discount, before.amount)


@given(reversed_accrual=st.integers(0, BOUND), available=st.integers(-BOUND, BOUND),
       debt_room=st.integers(-5, 2 * BOUND))
def test_an_unlimited_clawback_takes_no_more_than_the_debt_room(reversed_accrual, available,
                                                                 debt_room):
    taken = clawback("UNLIMITED", reversed_accrual, 0, available, debt_room=debt_room)
    assert taken.from_available == min(reversed_accrual, max(debt_room, 0))
    assert taken.from_available + taken.forgiven == reversed_accrual
