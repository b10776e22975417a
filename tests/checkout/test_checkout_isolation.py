"""Another company's ids are unknown ids (404), on every checkout operation."""
from tests.checkout.conftest import Register, build_shop, line

RECEIPT = [line("1", "100.00")]


def test_no_checkout_id_crosses_companies(app, client, shop, other_tenant):
    mine = Register(client, shop)
    customer = shop.customer("100.00")
    session = mine.open(customer, "R-SHARED")
    quote = mine.quote(session["id"], RECEIPT)
    mine.hold(session["id"], quote["id"])
    held = mine.open(customer)
    held_quote = mine.quote(held["id"], RECEIPT)
    mine.hold(held["id"], held_quote["id"])
    sale = mine.commit(session["id"], quote["id"])

    other_shop = build_shop(app, other_tenant)
    theirs = Register(client, other_shop)
    their_customer = other_shop.customer("100.00")
    theirs.open(customer, expect=404)  # my customer
    plain = Register(client, other_shop, pos=False)
    plain.open(their_customer, terminalId=shop.terminal_id, expect=404)
    plain.open(their_customer, storeId=shop.store_id, expect=404)
    # My register's pos key names no terminal of theirs.
    other_shop.pos_key = shop.pos_key
    theirs.open(their_customer, expect=403)
    other_shop.pos_key = theirs.shop.pos_key

    for session_id in (session["id"], held["id"]):
        plain.quote(session_id, RECEIPT, expect=404)
        plain.hold(session_id, held_quote["id"], expect=404)
        plain.release(session_id, expect=404)
        plain.commit(session_id, quote["id"], expect=404)
    their_session = plain.open(their_customer)
    plain.hold(their_session["id"], held_quote["id"], expect=404)  # my quote, their session
    plain.commit(their_session["id"], held_quote["id"], expect=404)
    plain.return_lines(sale["id"], [("1", "1")], expect=404)
    plain.lookup("R-SHARED", expect=404)

    # Receipt ids are the company's own: theirs may repeat mine.
    their_sale = plain.checkout(their_customer, RECEIPT)["sale"]
    assert their_sale["customerId"] == their_customer
    again = plain.open(their_customer, "R-SHARED")
    sale_again = plain.commit(again["id"], plain.quote(again["id"], RECEIPT)["id"])
    assert sale_again["externalReceiptId"] == "R-SHARED"
    assert mine.lookup("R-SHARED") == sale

    # Nothing of mine moved.
    # 100.00 − 30.00 redeemed + 3.50 earned, 30.00 held by the other session.
    assert shop.account(customer) == {"available": "43.50", "pending": "0.00", "reserved": "30.00"}
    assert shop.verify() == []
