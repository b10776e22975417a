"""Gift-card lookup at the register."""
from __future__ import annotations

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.gift_cards_schemas import GiftCardResponse
from app.database.engine import request_session, utcnow
from app.services.cards import gift_cards
from app.services.errors import NotFound, RateLimited

blp = Blueprint("gift_cards", __name__, url_prefix="/v1", description="Gift cards")


def miss_counter(app) -> gift_cards.MissCounter:
    """Redis when configured (shared by every worker), else the database; made once per
    process, after gunicorn forks, on first use."""
    counter = app.extensions.get("gift_card_misses")
    if counter is None:
        redis_url = app.config["SETTINGS"].redis_url
        if redis_url:
            from redis import Redis

            counter = gift_cards.RedisMissCounter(
                Redis.from_url(redis_url, socket_connect_timeout=1, socket_timeout=1))
        else:
            counter = gift_cards.DatabaseMissCounter()
        app.extensions["gift_card_misses"] = counter
    return counter


@blp.route("/gift-cards/<code>")
class GiftCardByCode(MethodView):
    @blp.operation("getGiftCard", scope="checkout:write", errors=("rate_limited",))
    @blp.response(200, GiftCardResponse)
    def get(self, code):
        """A gift card by its code as typed (any case; spaces and dashes ignored).

        For the register: the code is typed by hand, so case, spaces and dashes do not matter. The
        answer masks the code (twelve `*` and its last 4 characters) and shows state, balance and
        expiry; a card past `expiresAt` is EXPIRED. An unknown code is a 404, and more than 10
        misses a minute from one key are a 429 with `Retry-After`, so codes cannot be guessed.
        Changes nothing.
        """
        session = request_session()
        now = utcnow()
        try:
            card = gift_cards.find_gift_card(
                session, g.company_id, g.principal.credential_id, code,
                pepper=current_app.config["SETTINGS"].api_key_pepper, now=now,
                misses=miss_counter(current_app))
        except (NotFound, RateLimited):
            session.commit()  # the miss is this request's effect, even though it is refused
            raise
        return {"code": gift_cards.masked_code(card), "state": gift_cards.state_at(card, now),
                "balance": card.balance, "initial_amount": card.initial_amount,
                "currency": gift_cards.CURRENCY, "expires_at": card.expires_at}
