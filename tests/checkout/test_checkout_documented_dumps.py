"""The register's responses are built by hand (`as_json`, for speed); the schemas that document
them can dump the same resources. For generated checkouts and returns (hypothesis), each
hand-built body equals its schema's dump of the same resource, field for field."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.api.checkout_schemas import (CheckoutSessionResponse, HoldResponse, QuoteResponse,
                                      SaleResponse)
from app.api.sales_schemas import ReturnResponse, SaleLookupResponse
from app.services.checkout import holds, quotes, returns, sales
from tests.checkout.test_checkout_properties import (PROPERTY, _lines, _opened, _run,
                                                     receipt_lines,
                                                     shop_with_catalog)  # noqa: F401 (fixture)


def documented(schema, resource) -> None:
    assert resource.as_json() == schema.dump(resource), type(resource).__name__


@PROPERTY
@given(drawn=receipt_lines, balance=st.integers(0, 300_000), data=st.data(),
       cap=st.none() | st.integers(0, 300_000),
       policy=st.sampled_from(["UNLIMITED", "WITHIN_BALANCE", "ONLY_PENDING"]),
       delay=st.sampled_from([0, 7]))
def test_hand_built_bodies_are_what_their_schemas_dump(shop_with_catalog, drawn, balance, data,
                                                       cap, policy, delay):
    shop = shop_with_catalog
    company = shop.tenant.company_id
    _, session, now = _opened(shop, balance=balance, policy=policy, delay=delay,
                              store_id=data.draw(st.sampled_from([shop.store_id, None]), "store"))
    documented(CheckoutSessionResponse(), session)
    quote = _run(shop, lambda s: quotes.quote_receipt(
        s, company, session.id, lines=_lines(drawn), redeem_amount=cap, now=now))
    documented(QuoteResponse(), quote)
    if quote.discount and data.draw(st.booleans(), "hold"):
        place = lambda s: holds.place_hold(s, company, session.id, quote_id=quote.id,  # noqa: E731
                                           amount=None, now=now)
        documented(HoldResponse(), _run(shop, place))
        if data.draw(st.booleans(), "release"):
            documented(HoldResponse(), _run(shop, lambda s: holds.release_hold(
                s, company, session.id, reason="changed mind", now=now)))
    sale = _run(shop, lambda s: sales.commit_sale(s, company, session.id, quote_id=quote.id,
                                                  now=now))
    documented(SaleResponse(), sale)
    left = {line.line_id: line.quantity for line in sale.lines}
    while left:
        chosen = data.draw(st.lists(st.sampled_from(sorted(left)), min_size=1, unique=True),
                           "lines")
        request = [{"line_id": line_id, "quantity": data.draw(st.integers(1, left[line_id]),
                                                              "quantity")}
                   for line_id in chosen]
        documented(ReturnResponse(), _run(shop, lambda s: returns.return_lines(
            s, company, sale.id, lines=request, now=now)))
        for part in request:
            left[part["line_id"]] -= part["quantity"]
            if not left[part["line_id"]]:
                del left[part["line_id"]]
        if not data.draw(st.booleans(), "return more"):
            break
    documented(SaleLookupResponse(), _run(shop, lambda s: sales.sale_by_receipt(
        s, company, sale.external_receipt_id)))
