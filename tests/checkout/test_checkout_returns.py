"""Returns (docs/api.md#money): shares rounded down, the emptying return takes exactly what is
left, the clawback policies, the pending accrual cancelled first, the sale's states."""
from datetime import timedelta

from app.database.engine import utcnow
from app.services.rewards import ledger
from app.services.unit_of_work import UnitOfWork
from tests.checkout.conftest import line

# 3 pieces for 100.00 and 1.5 kg for 50.00: discounts 30.00 and 15.00 when 45.00 is held;
# accruals (70.00 and 35.00) × 5 % = 3.50 and 1.75.
RECEIPT = [line("1", "100.00", quantity="3"), line("2", "50.00", quantity="1.500")]


def _totals(returned):
    return (returned["restoredRedemption"], returned["reversedAccrual"],
            returned["forgivenAccrual"], returned["saleState"])


def _debit(shop, customer_id, kopecks):
    def work(session):
        account = ledger.lock(UnitOfWork.of(session), shop.tenant.company_id, customer_id, utcnow())
        ledger.post(account, type="ADJUSTMENT", amount=-kopecks, now=utcnow(),
                    basis="spent elsewhere")
    shop.arrange(work)


def test_partial_returns_round_down_and_the_last_takes_what_is_left(register, shop):
    customer = shop.customer("100.00")
    sale = register.checkout(customer, RECEIPT)["sale"]
    assert (sale["redeemed"], sale["accrued"]) == ("45.00", "5.25")
    assert shop.account(customer)["available"] == "60.25"

    first = register.return_lines(sale["id"], [("1", "1")])
    # 30.00 × 1/3 = 10.00; 3.50 × 1/3 = 1.1666… → 1.16
    assert first["lines"] == [{"lineId": "1", "quantity": "1.000", "restoredRedemption": "10.00",
                               "reversedAccrual": "1.16"}]
    assert _totals(first) == ("10.00", "1.16", "0.00", "PARTIALLY_RETURNED")
    assert first["balance"] == {"available": "69.09", "pending": "0.00", "reserved": "0.00"}
    assert shop.events("sale.returned") == [first]

    assert _totals(register.return_lines(sale["id"], [("1", "1")]))[:2] == ("10.00", "1.16")
    register.return_lines(sale["id"], [("1", "2")], expect=409)  # only 1 piece is left
    assert register.last.get_json()["code"] == "return_exceeds_sale"
    # The piece that empties line 1 takes what is left: 30.00 − 20.00 and 3.50 − 2.32.
    last = register.return_lines(sale["id"], [("1", "1"), ("2", "0.700")])
    # Line 2: 15.00 × 0.7/1.5 = 7.00; 1.75 × 0.7/1.5 = 0.8166… → 0.81
    assert [(l["restoredRedemption"], l["reversedAccrual"]) for l in last["lines"]] == [
        ("10.00", "1.18"), ("7.00", "0.81")]
    assert _totals(last) == ("17.00", "1.99", "0.00", "PARTIALLY_RETURNED")

    lookup = register.lookup(sale["externalReceiptId"])
    assert [l["returnedQuantity"] for l in lookup["lines"]] == ["3.000", "0.700"]
    assert lookup["state"] == "PARTIALLY_RETURNED"
    assert lookup["receiptText"] == sale["receiptText"]  # what was printed, not today's balance

    final = register.return_lines(sale["id"], [("2", "0.800")])
    assert _totals(final) == ("8.00", "0.94", "0.00", "RETURNED")
    # Everything came back: the sale nets to zero.
    assert final["balance"] == {"available": "100.00", "pending": "0.00", "reserved": "0.00"}
    assert register.lookup(sale["externalReceiptId"])["state"] == "RETURNED"
    register.return_lines(sale["id"], [("2", "0.001")], expect=409)
    assert register.last.get_json()["code"] == "return_exceeds_sale"
    assert shop.verify() == []


def _spent_accrual(register, shop, policy):
    """A sale without redemption earning 7.50, of which 7.00 was spent since."""
    shop.program(clawback_policy=policy)
    customer = shop.customer("0.00")
    sale = register.checkout(customer, RECEIPT)["sale"]
    assert (sale["redeemed"], sale["accrued"]) == ("0.00", "7.50")
    _debit(shop, customer, 700)
    return customer, sale


def test_unlimited_clawback_may_leave_a_debt(register, shop):
    customer, sale = _spent_accrual(register, shop, "UNLIMITED")
    returned = register.return_lines(sale["id"], [("1", "3"), ("2", "1.5")])
    assert _totals(returned) == ("0.00", "7.50", "0.00", "RETURNED")
    assert returned["balance"]["available"] == "-7.00"
    assert shop.verify() == []


def test_within_balance_clawback_stops_at_zero_and_forgives_the_rest(register, shop):
    customer, sale = _spent_accrual(register, shop, "WITHIN_BALANCE")
    returned = register.return_lines(sale["id"], [("1", "3"), ("2", "1.5")])
    # Per line the computed shares; the totals say what was taken: 0.50 of 7.50.
    assert [l["reversedAccrual"] for l in returned["lines"]] == ["5.00", "2.50"]
    assert _totals(returned) == ("0.00", "0.50", "7.00", "RETURNED")
    assert returned["balance"]["available"] == "0.00"
    assert shop.verify() == []


def test_within_balance_counts_the_redemption_the_return_gives_back(register, shop):
    shop.program(clawback_policy="WITHIN_BALANCE")
    customer = shop.customer("45.00")
    sale = register.checkout(customer, RECEIPT)["sale"]
    _debit(shop, customer, 525)  # the 5.25 earned is spent: 0.00 left
    returned = register.return_lines(sale["id"], [("2", "1.5")])
    # 15.00 comes back first, so the 1.75 earned on line 2 can be taken in full.
    assert _totals(returned) == ("15.00", "1.75", "0.00", "PARTIALLY_RETURNED")
    assert returned["balance"]["available"] == "13.25"


def test_only_pending_takes_back_nothing_already_spendable(register, shop):
    customer, sale = _spent_accrual(register, shop, "ONLY_PENDING")
    returned = register.return_lines(sale["id"], [("1", "3")])
    assert _totals(returned) == ("0.00", "0.00", "5.00", "PARTIALLY_RETURNED")
    assert returned["balance"]["available"] == "0.50"


def test_a_pending_accrual_is_cancelled_first(register, shop, db):
    shop.program(accrual_delay_days=14, clawback_policy="ONLY_PENDING")
    customer = shop.customer("0.00")
    sale = register.checkout(customer, RECEIPT)["sale"]
    assert shop.account(customer) == {"available": "0.00", "pending": "7.50", "reserved": "0.00"}
    first = register.return_lines(sale["id"], [("1", "3")])
    assert _totals(first) == ("0.00", "5.00", "0.00", "PARTIALLY_RETURNED")
    assert first["balance"] == {"available": "0.00", "pending": "2.50", "reserved": "0.00"}
    # Fifteen days on the rest has matured: the accrual and its cancellation together.
    account = ledger.lock(UnitOfWork.of(db), shop.tenant.company_id, customer,
                          utcnow() + timedelta(days=15))
    assert (account.available, account.pending) == (250, 0)
    db.commit()
    second = register.return_lines(sale["id"], [("2", "1.5")])
    assert _totals(second) == ("0.00", "0.00", "2.50", "RETURNED")
    assert shop.verify() == []


def test_unlimited_with_a_pending_accrual_nets_to_zero(register, shop, db):
    shop.program(accrual_delay_days=14)
    customer = shop.customer("20.00")
    sale = register.checkout(customer, RECEIPT)["sale"]
    # 20.00 over 30 : 15 → 13.33 and 6.67; accruals 86.67 × 5 % = 4.33, 43.33 × 5 % = 2.16.
    assert (sale["redeemed"], sale["accrued"]) == ("20.00", "6.49")
    register.return_lines(sale["id"], [("1", "3"), ("2", "1.5")])
    assert shop.account(customer) == {"available": "20.00", "pending": "0.00", "reserved": "0.00"}
    assert shop.verify() == []


def test_return_validation(register, shop):
    customer = shop.customer("100.00")
    sale = register.checkout(customer, RECEIPT)["sale"]
    register.return_lines(sale["id"], [("1", "1"), ("9", "1")], expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "lines", 1, "lineId"]
    register.return_lines(sale["id"], [("1", "1"), ("1", "1")], expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "lines", 1, "lineId"]
    register.return_lines(sale["id"], [("1", "0")], expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "lines", 0, "quantity"]
    register.call("POST", f"/v1/sales/{sale['id']}/returns", {"lines": []}, expect=422)
    register.return_lines("no-such-sale", [("1", "1")], expect=404)
    assert shop.events("sale.returned") == []
