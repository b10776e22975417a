"""The shopper's loyalty card, outside /v1 and without a key: the token in the address is
the only credential. A web page to show at the register, and an Apple Wallet pass."""
from __future__ import annotations

import logging
import os

from flask import Response, current_app, render_template, request
from flask.views import MethodView
from markupsafe import Markup

from app.api.base import Blueprint
from app.database.engine import request_session, utcnow
from app.services.cards import card_page, identifiers
from app.services.cards.wallet_pass import PassSigner
from app.services.errors import DomainError, NotFound
from app.web import languages

log = logging.getLogger("app.cards")
blp = Blueprint("cards", __name__, url_prefix="/cards", description="Customer loyalty cards")

PKPASS_MEDIA_TYPE = "application/vnd.apple.pkpass"
WALLET_SETTINGS = ("cert_file", "key_file", "wwdr_file", "pass_type_id", "team_id")
# The page runs no script and loads nothing from anywhere: inline styles and SVG only.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",  # the token is the address: never hand it to another site
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Robots-Tag": "noindex, nofollow",
}


def _prefers_html() -> bool:
    return request.accept_mimetypes.best_match(["application/json", "text/html"]) == "text/html"


def _open_card(token: str) -> card_page.LoyaltyCard | Response:
    """The card, or the 404 in the form the client prefers; it never says why."""
    try:
        return card_page.card_by_token(request_session(), token, utcnow())
    except NotFound:
        if not _prefers_html():
            raise
        return Response(render_template("card_not_found.html"), 404,
                        headers=PAGE_HEADERS, mimetype="text/html")


def wallet_signer() -> PassSigner | None:
    """The pass certificate from the WALLET_* settings, or None when any of them is missing
    or its files cannot be read. Kept per process, and read again when a file changes (a
    renewed certificate needs no restart)."""
    wallet = current_app.config["SETTINGS"].wallet or {}
    if not all(wallet.get(name) for name in WALLET_SETTINGS):
        return None
    files = [wallet[name] for name in WALLET_SETTINGS[:3]]
    try:
        version = tuple((path, os.stat(path).st_mtime_ns) for path in files)
        cached_version, signer = current_app.extensions.get("wallet_signer", (None, None))
        if cached_version != version:
            signer = PassSigner.from_files(*(wallet[name] for name in WALLET_SETTINGS))
            current_app.extensions["wallet_signer"] = (version, signer)
        return signer
    except OSError:
        log.error("the WALLET_* certificate files cannot be read", exc_info=True)
        return None


@blp.route("/<token>")
class CardPage(MethodView):
    @blp.operation("getCardPage", scope=None,
                   query={"lang": "The page's language, `ru` or `en`, kept in a cookie for the "
                                  "card's next visits (else the browser's Accept-Language)"})
    @blp.response(200, {"type": "string"}, content_type="text/html",
                  description="The card page: barcode, balance, stores, Add to Apple Wallet")
    def get(self, token):
        """The customer's card as a small mobile web page.

        No key: the unguessable token in the address is the only credential, and it never reaches a
        log. The page shows the card number as a barcode and QR code, the balance (with due expiries
        applied), the company's published stores and, when this server can sign passes, an Add to
        Apple Wallet link. An unknown token is a 404 that never says why, as an HTML page to a
        browser.
        """
        card = _open_card(token)
        if isinstance(card, Response):
            return card
        stores, store_total = card_page.published_stores(request_session(), card.company.id)
        html = render_template(
            "card.html",
            card=card,
            amount=languages.amount,
            barcode=Markup(identifiers.ean13_svg(card.customer.card_number)),
            qr_code=Markup(identifiers.barcode_svg(card.customer.card_number, scale=6)),
            cities=card_page.stores_by_city(stores),
            store_count=len(stores),
            store_total=store_total,
            pending_arrives_on=languages.day(card_page.pending_arrival(card.account, stores)),
            wallet_url=f"{token}.pkpass" if wallet_signer() is not None else None,
        )
        page = Response(html, 200, headers=PAGE_HEADERS, mimetype="text/html")
        languages.remember_card_language(page)
        return page


@blp.route("/<token>.pkpass")
class CardPass(MethodView):
    @blp.operation("getCardPass", scope=None, errors=("wallet_not_configured",))
    @blp.response(200, {"type": "string", "format": "binary"}, content_type=PKPASS_MEDIA_TYPE,
                  description="An Apple Wallet store card")
    def get(self, token):
        """The customer's card as an Apple Wallet pass (.pkpass).

        No key, like the card page. A signed store card (`application/vnd.apple.pkpass`) with the
        card number as its barcode, the balance, and the company's first 10 active MINIAPP stores as
        locations; it asks this server's `/passkit` web service for its updates, with a token of
        its own. 503 `wallet_not_configured` when this server has no pass certificate; an unknown
        token is a 404.
        """
        card = _open_card(token)
        if isinstance(card, Response):
            return card
        signer = wallet_signer()
        if signer is None:
            raise DomainError("Apple Wallet passes are not configured on this server",
                              code="wallet_not_configured", status=503)
        settings = current_app.config["SETTINGS"]
        body = card_page.build_wallet_pass(request_session(), card, signer,
                                           public_base_url=settings.public_base_url,
                                           pepper=settings.api_key_pepper, now=utcnow())
        return Response(body, 200, mimetype=PKPASS_MEDIA_TYPE, headers={
            "Content-Disposition": 'attachment; filename="loyalty-card.pkpass"',
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        })
