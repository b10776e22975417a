"""The safe cashier catalog: an id, the register's external id and a name, nothing more."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.cashiers_schemas import CashierListArgs, CashierListResponse
from app.database.engine import request_session
from app.services.locations import stores

blp = Blueprint("cashiers", __name__, url_prefix="/v1", description="Cashier catalog")


@blp.route("/cashiers")
class Cashiers(MethodView):
    @blp.operation("listCashiers", scope="locations:read")
    @blp.arguments(CashierListArgs, location="query")
    @blp.response(200, CashierListResponse)
    def get(self, args):
        """Cashiers by name; they enter the catalog when a register opens a checkout session.

        An offset page; `query` matches part of the name. Holds only an id, the register's external
        id and a name: cashiers are written by checkout-session creation (by externalId), never
        here. Changes nothing.
        """
        return stores.list_cashiers(request_session(), g.company_id, page=args["page"],
                                    page_size=args["page_size"], query=args.get("query"))
