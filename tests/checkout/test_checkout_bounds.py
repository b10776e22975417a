"""Amounts at and past the bounds (docs/api.md#money) through every money path: an account's figures
stay within ±10,000,000,000,000.00, a receipt totals no more, a commit's accrual is cut at the
bound and the sale commits; no amount gives a 500."""
from __future__ import annotations

from datetime import date

from sqlalchemy import update

from app.models import RewardAccount, Sale
from app.services.rewards import tiers
from app.services.rewards.bounds import BALANCE_BOUND, SPEND_CEILING
from app.wire import format_amount, parse_amount
from tests.checkout.conftest import line

BOUND = format_amount(BALANCE_BOUND)  # "10000000000000.00"
LARGEST_LINE = "100000000000.00"  # a receipt line's own most (100 billion roubles)
# A hundred of the largest lines total exactly the bound.
AT_THE_BOUND = [line(str(n), LARGEST_LINE) for n in range(100)]


def _adjust(register, customer_id: str, amount: str, *, expect: int = 201) -> dict:
    return register.call("POST", f"/v1/customers/{customer_id}/reward-adjustments",
                         {"amount": amount, "basis": "near the bound"}, expect=expect).get_json()


def _within_bound(shop, customer_id: str) -> dict:
    figures = shop.account(customer_id)
    assert all(abs(parse_amount(value)) <= BALANCE_BOUND for value in figures.values()), figures
    return figures


def _sale(register, customer_id: str, lines: list[dict], redeem: str | None = "0") -> dict:
    return register.checkout(customer_id, lines, redeem=redeem)["sale"]


def test_an_adjustment_reaches_the_bound_and_not_a_kopeck_beyond(register, shop):
    customer = shop.customer()
    refused = _adjust(register, customer, "92233720368547758.07", expect=422)
    assert refused["detail"][0]["loc"] == ["body", "amount"]
    _adjust(register, customer, "9999999999999.99")
    refused = _adjust(register, customer, "0.02", expect=422)
    assert refused["detail"][0]["loc"] == ["body", "amount"]
    assert _adjust(register, customer, "0.01")["balance"]["available"] == BOUND
    _adjust(register, customer, "0.01", expect=422)
    # A debit is no bound's business: one beyond the balance is the usual 409.
    assert _adjust(register, customer, f"-{BOUND}")["balance"]["available"] == "0.00"
    assert shop.verify() == []


def test_pending_points_count_against_the_bound(register, shop):
    """Pending matures into available: an adjustment leaves room for what is pending."""
    shop.program(accrual_delay_days=14)
    customer = shop.customer()
    sale = _sale(register, customer, [line("1", "1000.00")])
    assert sale["accrued"] == "50.00"
    _adjust(register, customer, "9999999999950.01", expect=422)
    assert _adjust(register, customer, "9999999999950.00")["balance"] == {
        "available": "9999999999950.00", "pending": "50.00", "reserved": "0.00"}


def test_a_receipt_totals_at_most_the_bound(register, shop):
    customer = shop.customer()
    session = register.open(customer)
    too_much = register.quote(session["id"], AT_THE_BOUND + [line("last", "0.01")], expect=422)
    assert [item["loc"] for item in too_much["detail"]] == [["body", "lines"]]
    quote = register.quote(session["id"], AT_THE_BOUND)
    assert quote["totalAmount"] == BOUND and quote["accrual"] == "500000000000.00"


def test_a_commit_near_the_bound_is_cut_and_the_sale_commits(register, shop):
    customer = shop.customer()
    _adjust(register, customer, "9999999999999.70")
    sale = _sale(register, customer, [line("1", "10.00"), line("2", "10.00")])
    # 5 % of 20.00 is 1.00; the bound leaves 0.30, spread over the lines.
    assert sale["accrued"] == "0.30"
    assert [item["accrual"] for item in sale["lines"]] == ["0.15", "0.15"]
    assert _within_bound(shop, customer)["available"] == BOUND
    again = _sale(register, customer, AT_THE_BOUND)
    assert again["state"] == "COMMITTED" and again["accrued"] == "0.00"
    assert [item["accrual"] for item in again["lines"]] == ["0.00"] * 100
    returned = register.return_lines(sale["id"], [("1", "1"), ("2", "1")])
    assert returned["reversedAccrual"] == "0.30" and returned["saleState"] == "RETURNED"
    assert returned["balance"]["available"] == "9999999999999.70"
    assert shop.verify() == []


def test_a_hold_commit_and_return_at_the_bound_never_pass_it(register, shop):
    customer = shop.customer()
    _adjust(register, customer, BOUND)
    session, quote, hold = register.held(customer, AT_THE_BOUND)
    assert hold["amount"] == "3000000000000.00" == quote["discount"]
    assert _within_bound(shop, customer)["reserved"] == "3000000000000.00"
    sale = register.commit(session["id"], quote["id"])
    # The capture made 3,000,000,000,000.00 of room: 5 % of the 7,000,000,000,000.00 paid fits.
    assert (sale["redeemed"], sale["accrued"]) == ("3000000000000.00", "350000000000.00")
    assert _within_bound(shop, customer)["available"] == "7350000000000.00"
    returned = register.return_lines(sale["id"], [(str(n), "1") for n in range(100)])
    # The restore is cut to the room before the same return takes its accrual back.
    assert returned["restoredRedemption"] == "2650000000000.00"
    assert returned["reversedAccrual"] == "350000000000.00"
    assert returned["balance"]["available"] == "9650000000000.00"
    _within_bound(shop, customer)
    assert shop.verify() == []


def test_a_debt_goes_down_to_the_bound_and_the_rest_is_forgiven(register, shop):
    shop.program(accrual_bp=10_000)  # 100 %: a receipt at the bound earns the bound
    customer = shop.customer()
    sales = []
    for _ in range(2):
        sales.append(_sale(register, customer, AT_THE_BOUND))
        assert sales[-1]["accrued"] == BOUND
        _adjust(register, customer, f"-{BOUND}")
    whole = [(str(n), "1") for n in range(100)]
    first = register.return_lines(sales[0]["id"], whole)
    assert (first["reversedAccrual"], first["forgivenAccrual"]) == (BOUND, "0.00")
    assert first["balance"]["available"] == f"-{BOUND}"
    second = register.return_lines(sales[1]["id"], whole)
    assert (second["reversedAccrual"], second["forgivenAccrual"]) == ("0.00", BOUND)
    assert second["balance"]["available"] == f"-{BOUND}"
    # From the deepest debt to the top: twice the bound in one adjustment, not a kopeck more.
    _adjust(register, customer, "20000000000000.01", expect=422)
    assert _adjust(register, customer, "20000000000000.00")["balance"]["available"] == BOUND
    assert shop.verify() == []


def test_a_birthday_bonus_at_the_bound_is_cut(register, shop):
    shop.program(birthday_bonus=500)
    customer = shop.customer()
    _adjust(register, customer, "9999999999999.99")
    shop.arrange(lambda s: s.execute(update(RewardAccount).where(
        RewardAccount.customer_id == customer).values(birthday_due_on=date(2000, 1, 1))))
    response = register.client.get(f"/v1/customers/{customer}/reward-account",
                                   headers=shop.tenant.headers())
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["available"] == BOUND
    assert [event["amount"] for event in shop.events("reward.adjusted")][-1] == "0.01"


def test_a_tier_spend_past_64_bits_is_counted_up_to_its_ceiling(register, shop):
    """Each sale is bounded, their number is not: a recount over sales whose spends sum past
    64 bits (as thousands of receipts at the bound would) answers, at the ceiling."""
    shop.program(tiers=tiers.stored([tiers.Tier("Base", 0, 500), tiers.Tier("Gold", 100, 700)]))
    customer = shop.customer()
    sales = [_sale(register, customer, [line("1", "10.00")]) for _ in range(2)]
    shop.arrange(lambda s: s.execute(update(Sale).where(
        Sale.id.in_([sale["id"] for sale in sales])).values(spend=6 * 10 ** 18)))
    # A new window recounts the spend on the next touch.
    response = register.client.patch("/v1/program", json={"tierWindowDays": 30},
                                     headers=shop.tenant.headers())
    assert response.status_code == 200, response.get_json()
    standing = register.client.get(f"/v1/customers/{customer}/reward-account",
                                   headers=shop.tenant.headers())
    assert standing.status_code == 200, standing.get_json()
    assert standing.get_json()["tier"]["spend"] == format_amount(SPEND_CEILING)
    # At the ceiling a return cannot subtract: it recounts.
    register.return_lines(sales[0]["id"], [("1", "1")])
    again = register.checkout(customer, [line("1", "10.00")])
    assert again["quote"]["lines"][0]["accrualPercent"] == "7.00"
