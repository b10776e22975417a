"""A restricted redemption says why and never blocks the sale; a stopped subscription
refuses hold and commit but always lets a hold be released."""
from datetime import timedelta

from app.database.engine import utcnow
from tests.checkout.conftest import line

RECEIPT = [line("1", "100.00"), line("2", "50.00")]


def _restricted(quote):
    return quote["redemption"], quote["redeemable"], quote["discount"], quote["accrual"]


def test_stopped_subscription_quote_restricted_hold_and_commit_403_release_works(register, shop):
    customer = shop.customer("100.00")
    held = register.open(customer)
    held_quote = register.quote(held["id"], RECEIPT)
    register.hold(held["id"], held_quote["id"])
    open_session = register.open(customer)
    open_quote = register.quote(open_session["id"], RECEIPT)

    shop.subscription(status="SUSPENDED")
    quote = register.quote(open_session["id"], RECEIPT)
    # Still the accrual (5 % of 150.00), still each line's own redeemable; nothing redeemed.
    assert _restricted(quote) == ({"allowed": False, "restrictionReason": "SUBSCRIPTION_INACTIVE"},
                                  "0.00", "0.00", "7.50")
    assert [l["redeemable"] for l in quote["lines"]] == ["30.00", "15.00"]
    register.hold(open_session["id"], open_quote["id"], expect=403)
    assert register.last.get_json()["code"] == "subscription_inactive"
    register.commit(held["id"], held_quote["id"], expect=403)
    assert register.last.get_json()["code"] == "subscription_inactive"
    assert register.release(held["id"])["state"] == "RELEASED"
    assert shop.account(customer) == {"available": "100.00", "pending": "0.00", "reserved": "0.00"}


def test_a_subscription_past_its_access_date_is_stopped_too(register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer)
    shop.subscription(access_until=utcnow() - timedelta(seconds=1))
    quote = register.quote(session["id"], RECEIPT)
    assert quote["redemption"]["restrictionReason"] == "SUBSCRIPTION_INACTIVE"
    register.commit(session["id"], quote["id"], expect=403)
    shop.subscription(access_until=utcnow() + timedelta(days=1))
    assert register.commit(session["id"], quote["id"])["accrued"] == "7.50"


def test_no_balance(register, shop):
    customer = shop.customer("0.00")
    session = register.open(customer)
    quote = register.quote(session["id"], RECEIPT)
    assert _restricted(quote) == ({"allowed": False, "restrictionReason": "NO_BALANCE"},
                                  "0.00", "0.00", "7.50")
    assert register.commit(session["id"], quote["id"])["accrued"] == "7.50"


def test_no_redeemable_lines(register, shop):
    shop.catalog({"TOBACCO": (False, True)})
    customer = shop.customer("100.00")
    session = register.open(customer)
    quote = register.quote(session["id"], [line("1", "100.00", sku="TOBACCO"), line("2", "0.00")])
    assert _restricted(quote) == ({"allowed": False, "restrictionReason": "NO_REDEEMABLE_LINES"},
                                  "0.00", "0.00", "5.00")


def test_a_terminal_disabled_since_the_session_opened(client, register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer)
    shop.terminal("DISABLED")
    # Its own pos key is refused now; the session is reached without it.
    register.quote(session["id"], RECEIPT, expect=403)
    register.pos = False
    quote = register.quote(session["id"], RECEIPT)
    assert _restricted(quote) == ({"allowed": False, "restrictionReason": "TERMINAL_INACTIVE"},
                                  "0.00", "0.00", "7.50")
    assert register.commit(session["id"], quote["id"])["redeemed"] == "0.00"
