"""Sales a register made while it could not reach the service, sent later."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.checkout import CHECKOUT, sent
from app.api.checkout_schemas import SaleResponse
from app.api.offline_sales_schemas import (REQUEST_EXAMPLE, RESPONSE_EXAMPLE,
                                           CreateOfflineSaleRequest)
from app.database.engine import request_session, utcnow
from app.services.checkout import offline
from app.services.errors import InvalidField

blp = Blueprint("offline_sales", __name__, url_prefix="/v1",
                description="Sales made at the register while it was offline")


@blp.route("/offline-sales")
class OfflineSales(MethodView):
    @blp.operation("recordOfflineSale", **CHECKOUT, register_of_record=True,
                   errors=("not_found", "subscription_inactive", "receipt_already_committed",
                           "offline_sales_disabled", "offline_sale_too_old"))
    @blp.arguments(CreateOfflineSaleRequest(), example=REQUEST_EXAMPLE)
    @blp.response(201, SaleResponse, example=RESPONSE_EXAMPLE)
    def post(self, body):
        """Book a sale the register made while it could not reach the service: no redemption,
        the customer's accrual as a commit's.

        `X-Loyalty-Pos-Key` is required and names the register that made the sale, a terminal of
        the company in whatever state it is now (else 403 `terminal_inactive`). The customer is
        named exactly one way: `customerId`, `phone` or `cardNumber` (the wallet card's number);
        none or two is a 422 on `body.customer`, an unknown customer a 404. `soldAt`, with its
        offset, may be at most 5 minutes ahead of the service's clock (else a 422 on
        `body.soldAt`) and no older than the program's `offlineSaleWindowDays` (409
        `offline_sale_too_old`; 0 days: 409 `offline_sales_disabled`).

        Nothing is redeemed. The accrual is at the customer's percent now (tier, else program),
        each line's campaigns as they ran at `soldAt`, the store's catalog flags as now; PENDING
        until `soldAt` + `accrualDelayDays` (ACTIVE at once when that has passed). The sale counts
        toward tiers and in the reports at `soldAt`; `committedAt` is when it arrived, `offline`
        is true and `checkoutSessionId` null. One sale per receipt, online or offline: a receipt
        that has one is a 409 `receipt_already_committed` whose body has its `saleId`. 403
        `subscription_inactive` while the subscription is stopped. Idempotency-Key required;
        emits `sale.committed`.
        """
        if g.terminal is None:  # after the body's checks, as a header of the request's own
            raise InvalidField(["header", "X-Loyalty-Pos-Key"],
                               "the register that made the sale is required", "missing")
        return sent(offline.record_offline_sale(
            request_session(), g.company_id, terminal=g.terminal, now=utcnow(), **body), 201)
