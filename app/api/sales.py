"""Sales at the register: lookup by the register's receipt id, and returns."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.checkout import CHECKOUT, sent
from app.api.sales_schemas import (CreateReturnRequest, ReturnResponse, SaleLookupPath,
                                   SaleLookupResponse)
from app.db import request_session, utcnow
from app.services.checkout import returns, sales

blp = Blueprint("sales", __name__, url_prefix="/v1", description="Sales and returns")


@blp.route("/sales/by-external-receipt/<path:external_receipt_id>")
class SaleByReceipt(MethodView):
    @blp.operation("getSaleByReceipt", scope="checkout:write")
    @blp.arguments(SaleLookupPath(), location="path")
    @blp.response(200, SaleLookupResponse)
    def get(self, path, external_receipt_id):
        """The committed sale of a receipt, with what was printed on it."""
        return sent(sales.sale_by_receipt(request_session(), g.company_id,
                                          path["external_receipt_id"]), 200)


@blp.route("/sales/<sale_id>/returns")
class SaleReturns(MethodView):
    @blp.operation("returnLines", **CHECKOUT, errors=("return_exceeds_sale",))
    @blp.arguments(CreateReturnRequest())
    @blp.response(201, ReturnResponse)
    def post(self, body, sale_id):
        """Return lines of a sale: spent bonuses come back, earned ones are taken back as the
        program's clawback policy says."""
        return sent(returns.return_lines(request_session(), g.company_id, sale_id,
                                         lines=body["lines"], now=utcnow()), 201)
