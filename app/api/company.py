"""The caller's company, its loyalty program (read, and changed from the back office) and
its subscription (read only)."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint, json_response
from app.api.company_schemas import (CompanyResponse, ProgramResponse, SubscriptionResponse,
                                     UpdateProgramRequest)
from app.db import request_session, utcnow
from app.services.program import settings
from app.services.rewards.tiers import Tier
from app.services.tenancy import companies

blp = Blueprint("company", __name__, url_prefix="/v1", description="Company, program, subscription")


@blp.route("/company")
class CompanyView(MethodView):
    @blp.operation("getCompany", scope="company:read")
    @blp.response(200, CompanyResponse)
    def get(self):
        """The company the key belongs to."""
        return companies.get_company(request_session(), g.company_id)


@blp.route("/program")
class ProgramView(MethodView):
    @blp.operation("getProgram", scope="program:read")
    @blp.response(200, ProgramResponse)
    def get(self):
        """The loyalty program: percents, delays, hold life, enrolment, clawback policy,
        bonuses and tiers."""
        return json_response(settings.program_as_json(
            companies.get_program(request_session(), g.company_id)), 200)

    @blp.operation("updateProgram", scope="program:write", idempotency=(8, 100),
                   idempotency_required=False)
    @blp.arguments(UpdateProgramRequest)
    @blp.response(200, ProgramResponse)
    def patch(self, body):
        """Change any of the program's settings; emits program.updated."""
        changes = {"accrual_bp": body.get("accrualPercent"),
                   "max_redeem_bp": body.get("maxRedeemPercent"),
                   "accrual_delay_days": body.get("accrualDelayDays"),
                   "hold_ttl_seconds": body.get("holdTtlSeconds"),
                   "enrollment_requires_otp": body.get("enrollmentRequiresOtp"),
                   "clawback_policy": body.get("clawbackPolicy"),
                   "welcome_bonus": body.get("welcomeBonus"),
                   "birthday_bonus": body.get("birthdayBonus")}
        if "tiers" in body:
            changes["tier_list"] = [Tier(item["name"], item["minSpend"], item["accrualPercent"])
                                    for item in body["tiers"]]
        if "tierWindowDays" in body:
            changes["tier_window_days"] = body["tierWindowDays"]
        program = settings.change_program(request_session(), g.company_id, now=utcnow(), **changes)
        return json_response(settings.program_as_json(program), 200)


@blp.route("/subscription")
class SubscriptionView(MethodView):
    @blp.operation("getSubscription", scope="subscription:read")
    @blp.response(200, SubscriptionResponse)
    def get(self):
        """Tariff, register limit, active terminals, status and access dates."""
        session = request_session()
        subscription = companies.get_subscription(session, g.company_id)
        subscription.active_terminals = companies.count_active_terminals(session, g.company_id)
        return subscription
