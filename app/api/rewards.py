"""A customer's reward account: balances, manual adjustments, the ledger's history."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.paging import OffsetArgs
from app.api.rewards_schemas import (RewardAccountResponse, RewardActivityPageResponse,
                                     RewardAdjustmentRequest, RewardAdjustmentResponse)
from app.db import request_session, utcnow
from app.services.rewards import accounts
from app.services.wire import Balance

blp = Blueprint("rewards", __name__, url_prefix="/v1", description="Reward accounts")


@blp.route("/customers/<customer_id>/reward-account")
class RewardAccountView(MethodView):
    @blp.operation("getRewardAccount", scope="customers:read")
    @blp.response(200, RewardAccountResponse)
    def get(self, customer_id):
        """Available, pending and reserved bonuses; the tier and the next one."""
        return accounts.account_standing(request_session(), g.company_id, customer_id, utcnow())


@blp.route("/customers/<customer_id>/reward-adjustments")
class RewardAdjustments(MethodView):
    @blp.operation("adjustRewards", scope="ledger:write", idempotency=(8, 128),
                   errors=("insufficient_balance",))
    @blp.arguments(RewardAdjustmentRequest)
    @blp.response(201, RewardAdjustmentResponse)
    def post(self, body, customer_id):
        """Credit or debit bonuses by hand, with the reason; never below the available balance."""
        entry, account = accounts.adjust(request_session(), g.company_id, customer_id,
                                         amount=body["amount"], basis=body["basis"], now=utcnow())
        return {"entry": entry, "balance": Balance.of(account)}


@blp.route("/customers/<customer_id>/reward-activities")
class RewardActivities(MethodView):
    @blp.operation("listRewardActivities", scope="customers:read")
    @blp.arguments(OffsetArgs, location="query")
    @blp.response(200, RewardActivityPageResponse)
    def get(self, args, customer_id):
        """One page of the ledger, newest first."""
        entries, total = accounts.activities(request_session(), g.company_id, customer_id,
                                             offset=args["offset"], limit=args["limit"], now=utcnow())
        return {"items": entries, "offset": args["offset"], "limit": args["limit"], "total": total}
