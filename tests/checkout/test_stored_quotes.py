"""A quote's lines are kept packed for the commit to read back (migration 0027); a quote kept as
text from before commits as a packed one does."""
import json

from sqlalchemy import select, update

from app.models import Quote
from app.wire import unpacked
from tests.checkout.conftest import line

RECEIPT = [line("1", "100.00", quantity="2"), line("2", "50.00")]
SHOWN = ("totalAmount", "redeemed", "accrued", "lines")


def _sale(register, customer, as_text: bool, shop):
    session = register.open(customer)
    quote = register.quote(session["id"], RECEIPT)

    def kept_as_text(db):
        packed = db.scalar(select(Quote.packed_lines).where(Quote.id == quote["id"]))
        assert json.loads(unpacked(packed))["lines"][0]["lineId"] == "1"
        if as_text:
            db.execute(update(Quote).where(Quote.id == quote["id"]).values(
                packed_lines=None, lines=unpacked(packed).decode("utf-8")))
    shop.arrange(kept_as_text)
    register.hold(session["id"], quote["id"])
    sale = register.commit(session["id"], quote["id"])
    return {name: sale[name] for name in SHOWN}


def test_a_quote_kept_as_text_commits_as_a_packed_one(register, shop):
    packed = _sale(register, shop.customer("100.00"), False, shop)
    as_text = _sale(register, shop.customer("100.00"), True, shop)
    assert as_text == packed and packed["redeemed"] != "0.00"
