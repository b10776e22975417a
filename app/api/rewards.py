"""A customer's reward account: balances, manual adjustments, the ledger's history."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.paging import OffsetArgs
from app.api.rewards_schemas import (RewardAccountResponse, RewardActivityPageResponse,
                                     RewardAdjustmentRequest, RewardAdjustmentResponse)
from app.database.engine import request_session, utcnow
from app.services.rewards import accounts
from app.web.actors import key_actor
from app.wire import Balance

blp = Blueprint("rewards", __name__, url_prefix="/v1", description="Reward accounts")


@blp.route("/customers/<customer_id>/reward-account")
class RewardAccountView(MethodView):
    @blp.operation("getRewardAccount", scope="customers:read")
    @blp.response(200, RewardAccountResponse)
    def get(self, customer_id):
        """Available, pending and reserved bonuses; the tier and the next one.

        Reading the account applies what has come due: accruals that mature, points that expire.
        `reserved` is what ACTIVE holds keep; `tier` is null without tiers, else
        the customer's spend over the window and what remains to the next tier; `expiring` lists the
        next moments points would expire. Another company's customer is a 404.
        """
        return accounts.account_standing(request_session(), g.company_id, customer_id, utcnow())


@blp.route("/customers/<customer_id>/reward-adjustments")
class RewardAdjustments(MethodView):
    @blp.operation("adjustRewards", scope="ledger:write", idempotency=(8, 128),
                   errors=("insufficient_balance",))
    @blp.arguments(RewardAdjustmentRequest)
    @blp.response(201, RewardAdjustmentResponse)
    def post(self, body, customer_id):
        """Credit or debit bonuses by hand, with the reason; never below the available balance.

        `amount` is signed and not zero: a credit is ACTIVE at once (and pays off a debt first), a
        debit beyond the available balance is a 409 `insufficient_balance`. `basis` (1..500
        characters) says why. `expiresAt`, only with a credit, makes promotional points that expire
        then. The Idempotency-Key is required (8..128); emits `reward.adjusted`.
        """
        entry, account = accounts.adjust(request_session(), g.company_id, customer_id,
                                         amount=body["amount"], basis=body["basis"],
                                         expires_at=body.get("expiresAt"), now=utcnow(),
                                         actor=key_actor())
        return {"entry": entry, "balance": Balance.of(account)}


@blp.route("/customers/<customer_id>/reward-activities")
class RewardActivities(MethodView):
    @blp.operation("listRewardActivities", scope="customers:read")
    @blp.arguments(OffsetArgs, location="query")
    @blp.response(200, RewardActivityPageResponse)
    def get(self, args, customer_id):
        """One page of the ledger, newest first.

        An offset page of the ledger, newest first: accruals (PENDING until they mature),
        redemptions, adjustments, restores and reversals of returns, expiries and bonuses, each with
        its signed amount and, for a credit, when it expires.
        """
        entries, total = accounts.activities(request_session(), g.company_id, customer_id,
                                             offset=args["offset"], limit=args["limit"], now=utcnow())
        return {"items": entries, "offset": args["offset"], "limit": args["limit"], "total": total}
