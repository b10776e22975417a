"""Registers: bound to a store, ACTIVE or DISABLED, never more ACTIVE than the tariff allows."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.terminals_schemas import (CreateTerminalRequest, TerminalListArgs,
                                       TerminalListResponse, TerminalResponse,
                                       UpdateTerminalRequest)
from app.web.actors import key_actor
from app.database.engine import request_session, utcnow
from app.services.locations import stores

blp = Blueprint("terminals", __name__, url_prefix="/v1", description="Terminals (registers)")


@blp.route("/terminals")
class Terminals(MethodView):
    @blp.operation("createTerminal", scope="locations:write",
                   errors=("not_found", "terminal_limit_reached", "pos_key_in_use"))
    @blp.arguments(CreateTerminalRequest)
    @blp.response(201, TerminalResponse)
    def post(self, body):
        """Register a terminal at a store; it is ACTIVE and takes one of the tariff's registers.

        The terminal is ACTIVE: one more than the subscription's `registerLimit` is a 409
        `terminal_limit_reached`. `posKey` (1..128 visible ASCII characters, no space at either end)
        is what the register sends as `X-Loyalty-Pos-Key`; it is unique in the company (409
        `pos_key_in_use`), a disabled terminal's included. An unknown store is a 404.
        """
        return stores.create_terminal(request_session(), g.company_id, store_id=body["storeId"],
                                      name=body["name"], pos_key=body["posKey"], now=utcnow(),
                                      actor=key_actor())

    @blp.operation("listTerminals", scope="locations:read", errors=("not_found",))
    @blp.arguments(TerminalListArgs, location="query")
    @blp.response(200, TerminalListResponse)
    def get(self, args):
        """The company's terminals, oldest first, optionally of one store.

        An offset page of the company's terminals with their state and posKey, oldest first;
        `storeId` narrows it to one store (an unknown store is a 404).
        """
        return stores.list_terminals(request_session(), g.company_id, page=args["page"],
                                     page_size=args["page_size"], store_id=args.get("storeId"))


@blp.route("/terminals/<terminal_id>")
class TerminalById(MethodView):
    @blp.operation("updateTerminal", scope="locations:write", errors=("terminal_limit_reached",))
    @blp.arguments(UpdateTerminalRequest)
    @blp.response(200, TerminalResponse)
    def patch(self, body, terminal_id):
        """Rename, move to another store, disable or enable again (within the register limit).

        Give at least one of `name`, `state`, `storeId`. Enabling a terminal again counts it against
        `registerLimit` (409 `terminal_limit_reached`). A DISABLED terminal's posKey is refused at
        once (403 `terminal_inactive`), and quotes of sessions it opened say TERMINAL_INACTIVE.
        """
        return stores.update_terminal(request_session(), g.company_id, terminal_id,
                                      now=utcnow(), actor=key_actor(), name=body.get("name"),
                                      state=body.get("state"), store_id=body.get("storeId"))
