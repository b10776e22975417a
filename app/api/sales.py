"""Sales at the register: lookup by the register's receipt id, and returns."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.checkout import CHECKOUT, sent
from app.api.sales_schemas import (CreateReturnRequest, ReturnResponse, SaleLookupPath,
                                   SaleLookupResponse)
from app.database.engine import request_session, utcnow
from app.services.checkout import returns, sales

blp = Blueprint("sales", __name__, url_prefix="/v1", description="Sales and returns")


@blp.route("/sales/by-external-receipt/<path:external_receipt_id>")
class SaleByReceipt(MethodView):
    @blp.operation("getSaleByReceipt", scope="checkout:write")
    @blp.arguments(SaleLookupPath(), location="path")
    @blp.response(200, SaleLookupResponse)
    def get(self, path, external_receipt_id):
        """The committed sale of a receipt, with what was printed on it.

        For a register that lost the answer to its commit: the receipt id as the register sent it
        (1..128 characters). A receipt without a committed sale is a 404. The lines show how much of
        each was returned. Changes nothing.
        """
        return sent(sales.sale_by_receipt(request_session(), g.company_id,
                                          path["external_receipt_id"]), 200)


@blp.route("/sales/<sale_id>/returns")
class SaleReturns(MethodView):
    @blp.operation("returnLines", **CHECKOUT, errors=("return_exceeds_sale",))
    @blp.arguments(CreateReturnRequest())
    @blp.response(201, ReturnResponse)
    def post(self, body, sale_id):
        """Return lines of a sale: spent bonuses come back, earned ones are taken back as the
        program's clawback policy says.

        Each line is given back in part or whole; beyond what is left of a line (or on a RETURNED
        sale) is a 409 `return_exceeds_sale`, and a lineId not in the sale is a 422 on
        `body.lines.<i>.lineId`. Spent bonuses are restored; earned ones are taken back, pending
        first, then as `clawbackPolicy` says (UNLIMITED may leave a debt; otherwise the rest is
        `forgivenAccrual`). The last return of a line restores exactly what is left. Idempotency-Key
        required; emits `sale.returned`.
        """
        return sent(returns.return_lines(request_session(), g.company_id, sale_id,
                                         lines=body["lines"], now=utcnow()), 201)
