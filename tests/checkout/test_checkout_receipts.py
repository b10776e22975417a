"""The money rules of docs/api.md#money on receipts worked out by hand, through the API.
Program: 5 % accrual, 30 % most redeemable, no accrual delay (the defaults)."""
from tests.checkout.conftest import line


def _lines(quote):
    return {l["lineId"]: (l["redeemable"], l["discount"], l["accrual"], l["restriction"])
            for l in quote["lines"]}


def test_odd_kopecks_spread_by_largest_remainder_under_a_redeem_cap(register, shop):
    customer = shop.customer("1000.00")
    session = register.open(customer)
    # redeemable: floor(33.33 × 30 %) = 9.99, floor(66.67 × 30 %) = 20.00, floor(0.01 × 30 %) = 0
    quote = register.quote(session["id"], [line("a", "33.33"), line("b", "66.67"),
                                           line("c", "0.01")], redeem="10.00")
    # 10.00 over 9.99 : 20.00 → 3.33 (rem 333/2999) and 6.66 (rem 2666/2999): the kopeck left
    # goes to b. Accrual: (33.33 − 3.33) × 5 % = 1.50, (66.67 − 6.67) × 5 % = 3.00, 0.01 → 0.
    assert _lines(quote) == {"a": ("9.99", "3.33", "1.50", None),
                             "b": ("20.00", "6.67", "3.00", None),
                             "c": ("0.00", "0.00", "0.00", None)}
    assert (quote["totalAmount"], quote["redeemable"], quote["discount"], quote["accrual"]) == \
        ("100.01", "29.99", "10.00", "4.50")
    assert quote["redemption"] == {"allowed": True, "restrictionReason": None}

    hold = register.hold(session["id"], quote["id"])
    assert (hold["amount"], hold["state"]) == ("10.00", "ACTIVE")
    assert shop.account(customer) == {"available": "990.00", "pending": "0.00", "reserved": "10.00"}
    sale = register.commit(session["id"], quote["id"])
    assert (sale["redeemed"], sale["accrued"], sale["state"]) == ("10.00", "4.50", "COMMITTED")
    assert [(l["lineId"], l["discount"], l["accrual"]) for l in sale["lines"]] == \
        [("a", "3.33", "1.50"), ("b", "6.67", "3.00"), ("c", "0.00", "0.00")]
    # No delay: the accrual is spendable at once. 1000.00 − 10.00 + 4.50.
    assert shop.account(customer) == {"available": "994.50", "pending": "0.00", "reserved": "0.00"}
    assert sale["receiptText"] == [
        "Bonuses redeemed:                  10.00",
        "Bonuses earned:                     4.50",
        "Bonus balance:                    994.50"]
    assert all(len(text) <= 40 for text in sale["receiptText"])
    assert shop.verify() == []


def test_excluded_items_neither_take_bonuses_nor_earn_them(register, shop):
    shop.catalog({"MILK": (True, True), "TOBACCO": (False, False), "BOOK": (False, True)})
    customer = shop.customer("1000.00")
    session = register.open(customer)
    quote = register.quote(session["id"], [line("1", "100.00", sku="MILK"),
                                           line("2", "250.00", sku="TOBACCO"),
                                           line("3", "50.00", sku="BOOK"),
                                           line("4", "10.00", sku="UNKNOWN")])
    # 30 % of MILK and of the item the catalog does not know; TOBACCO earns nothing either.
    # Σ redeemable 33.00 is all taken: MILK 30.00, the unknown item 3.00. Accrual:
    # (100 − 30) × 5 % = 3.50, BOOK 50 × 5 % = 2.50, (10 − 3) × 5 % = 0.35.
    assert _lines(quote) == {"1": ("30.00", "30.00", "3.50", None),
                             "2": ("0.00", "0.00", "0.00", "ITEM_NOT_REDEEMABLE"),
                             "3": ("0.00", "0.00", "2.50", "ITEM_NOT_REDEEMABLE"),
                             "4": ("3.00", "3.00", "0.35", None)}
    assert (quote["redeemable"], quote["discount"], quote["accrual"]) == ("33.00", "33.00", "6.35")
    register.hold(session["id"], quote["id"], amount="11.00")
    sale = register.commit(session["id"], quote["id"])
    # The held 11.00 is spread again (30 : 3 → 10.00 and 1.00); excluded lines stay at zero.
    assert [(l["lineId"], l["discount"], l["accrual"]) for l in sale["lines"]] == [
        ("1", "10.00", "4.50"), ("2", "0.00", "0.00"), ("3", "0.00", "2.50"), ("4", "1.00", "0.45")]
    assert (sale["redeemed"], sale["accrued"]) == ("11.00", "7.45")


def test_redemption_capped_by_the_balance(register, shop):
    customer = shop.customer("12.34")
    session = register.open(customer)
    quote = register.quote(session["id"], [line("1", "100.00"), line("2", "50.00")])
    # Σ redeemable 45.00 > balance 12.34. 12.34 over 30 : 15 → 8.22 (rem 3000/4500) and 4.11
    # (rem 1500/4500): the kopeck left goes to line 1. Accrual: 91.77 × 5 % = 4.58,
    # 45.89 × 5 % = 2.29.
    assert _lines(quote) == {"1": ("30.00", "8.23", "4.58", None),
                             "2": ("15.00", "4.11", "2.29", None)}
    assert (quote["redeemable"], quote["discount"], quote["accrual"]) == ("12.34", "12.34", "6.87")
    register.hold(session["id"], quote["id"])
    assert shop.account(customer) == {"available": "0.00", "pending": "0.00", "reserved": "12.34"}
    sale = register.commit(session["id"], quote["id"])
    assert (sale["redeemed"], sale["accrued"]) == ("12.34", "6.87")
    assert shop.account(customer) == {"available": "6.87", "pending": "0.00", "reserved": "0.00"}
    assert shop.verify() == []
