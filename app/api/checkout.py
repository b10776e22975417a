"""Checkout at the register: sessions, quote, hold, release, commit (docs/api.md#resources, #states,
#money).

Every operation takes an Idempotency-Key (8–100): a retried request never holds or commits
twice. The services return resources as the API shows them; they are sent as they are.
"""
from __future__ import annotations

from flask import Response, current_app, g
from flask.views import MethodView

from app.api.base import Blueprint, json_response
from app.api.checkout_schemas import (CheckoutSessionResponse, CommitSaleRequest,
                                      CreateCheckoutSessionRequest, CreateHoldRequest,
                                      CreateQuoteRequest, HoldResponse, QuoteResponse,
                                      ReleaseHoldRequest, SaleResponse)
from app.database.engine import request_session, utcnow
from app.services.checkout import holds, quotes, sales, sessions

blp = Blueprint("checkout", __name__, url_prefix="/v1", description="Checkout at the register")
CHECKOUT = {"scope": "checkout:write", "idempotency": (8, 100)}
# A hold or a commit, never while the subscription is stopped.
REDEMPTION_ERRORS = ("subscription_inactive", "invalid_state")
# Request schemas are given as instances: built once, not per request (with their nested
# schemas), which is a good part of parsing a receipt.


def sent(resource, status: int) -> Response:
    """The resource's JSON as the body, serialised once (no schema dump on this path)."""
    return json_response(resource.as_json(), status)


@blp.route("/checkout-sessions")
class CheckoutSessions(MethodView):
    @blp.operation("createCheckoutSession", **CHECKOUT,
                   errors=("not_found", "terminal_inactive", "receipt_already_committed"))
    @blp.arguments(CreateCheckoutSessionRequest())
    @blp.response(201, CheckoutSessionResponse)
    def post(self, body):
        """Open a checkout session: one receipt of the register, one customer.

        The terminal is the one named by `X-Loyalty-Pos-Key` (403 `terminal_inactive` if it is not
        ACTIVE) or by `terminalId` (both and different: a 422 on `body.terminalId`); the store is
        the terminal's, else `storeId`. A receipt id that already has a committed sale is a 409
        `receipt_already_committed`; an unknown customer, terminal or store is a 404. `cashier`
        enters the cashier catalog. The session is OPEN for 24 hours. Idempotency-Key required.
        """
        return sent(sessions.create_session(
            request_session(), g.company_id, now=utcnow(), pos_terminal=g.get("terminal"),
            ttl_seconds=current_app.config["SETTINGS"].session_ttl, **body), 201)


@blp.route("/checkout-sessions/<checkout_session_id>/quote")
class Quote(MethodView):
    @blp.operation("quoteReceipt", **CHECKOUT, errors=("invalid_state",))
    @blp.arguments(CreateQuoteRequest())
    @blp.response(201, QuoteResponse)
    def post(self, body, checkout_session_id):
        """Price the receipt: per line what bonuses may pay and what it earns; a restricted
        redemption says why and never blocks the sale.

        Only in OPEN (else 409 `invalid_state`). Per line: what bonuses may pay (`maxRedeemPercent`,
        0 for items not redeemable), the discount taken, and the accrual at the best of the
        customer's percent and any campaign's. `redeemAmount` caps the redemption. A restricted
        redemption (subscription stopped, no balance, no redeemable line, terminal disabled) has
        `allowed: false` and a reason, and the accrual still stands: the sale is never blocked.
        Duplicate lineIds or a negative amount are a 422 on `body.lines`. Changes no balance.
        """
        return sent(quotes.quote_receipt(request_session(), g.company_id, checkout_session_id,
                                         lines=body["lines"], redeem_amount=body["redeem_amount"],
                                         now=utcnow()), 201)


@blp.route("/checkout-sessions/<checkout_session_id>/hold")
class HoldOfSession(MethodView):
    @blp.operation("placeHold", **CHECKOUT,
                   errors=(*REDEMPTION_ERRORS, "hold_already_active", "insufficient_balance"))
    @blp.arguments(CreateHoldRequest())
    @blp.response(201, HoldResponse)
    def post(self, body, checkout_session_id):
        """Hold the quote's redemption: available bonuses become reserved until commit,
        release or the program's holdTtlSeconds.

        Only in OPEN and on the session's latest quote with a discount above 0 (else 409
        `invalid_state`; a second hold is 409 `hold_already_active`). `amount` defaults to the
        quote's discount (> 0 and at most it). Moves that much from available to reserved under a
        lock, 409 `insufficient_balance` if it is no longer there; the session becomes HELD until
        commit, release or `expiresAt` (holdTtlSeconds). 403 `subscription_inactive` while the
        subscription is stopped. Emits `checkout.hold.created`.
        """
        return sent(holds.place_hold(request_session(), g.company_id, checkout_session_id,
                                     quote_id=body["quote_id"], amount=body["amount"],
                                     now=utcnow()), 201)

    @blp.operation("releaseHold", **CHECKOUT, errors=("invalid_state",))
    @blp.arguments(ReleaseHoldRequest())
    @blp.response(200, HoldResponse)
    def delete(self, body, checkout_session_id):
        """Release the hold (payment cancelled); allowed while the subscription is stopped.

        Only in HELD (else 409 `invalid_state`): the reserved bonuses become available again and the
        session is OPEN for a new quote. Allowed while the subscription is stopped, so a cancelled
        payment never strands bonuses. Emits `checkout.hold.released`.
        """
        return sent(holds.release_hold(request_session(), g.company_id, checkout_session_id,
                                       reason=body["reason"], now=utcnow()), 200)


@blp.route("/checkout-sessions/<checkout_session_id>/commit")
class Commit(MethodView):
    @blp.operation("commitSale", **CHECKOUT,
                   errors=(*REDEMPTION_ERRORS, "receipt_already_committed"))
    @blp.arguments(CommitSaleRequest())
    @blp.response(201, SaleResponse)
    def post(self, body, checkout_session_id):
        """Fix the sale: capture the hold, spread it over the lines, write the accrual.

        In OPEN (no redemption) or HELD (else 409 `invalid_state`), on the session's latest quote.
        Captures the hold as a REDEMPTION, spreads it over the lines, and writes the ACCRUAL,
        PENDING until `accrualAvailableAt`. `receiptText` is what to print. 403
        `subscription_inactive` while the subscription is stopped; 409 `receipt_already_committed`
        if the receipt was committed by another session. Emits `sale.committed`.
        """
        return sent(sales.commit_sale(request_session(), g.company_id, checkout_session_id,
                                      quote_id=body["quote_id"], now=utcnow()), 201)
