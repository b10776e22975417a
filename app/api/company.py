"""The caller's company, its loyalty program (read, and changed from the back office) and
its subscription (read only)."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint, json_response
from app.api.company_schemas import (CompanyResponse, ProgramResponse, SubscriptionResponse,
                                     UpdateProgramRequest, program_changes)
from app.web.actors import key_actor
from app.database.engine import request_session, utcnow
from app.services.program import settings
from app.services.tenancy import companies

blp = Blueprint("company", __name__, url_prefix="/v1", description="Company, program, subscription")


@blp.route("/company")
class CompanyView(MethodView):
    @blp.operation("getCompany", scope="company:read")
    @blp.response(200, CompanyResponse)
    def get(self):
        """The company the key belongs to.

        The key carries its company: no request names one, and this is how a client learns which
        company its key acts for. Changes nothing.
        """
        return companies.get_company(request_session(), g.company_id)


@blp.route("/program")
class ProgramView(MethodView):
    @blp.operation("getProgram", scope="program:read")
    @blp.response(200, ProgramResponse)
    def get(self):
        """The loyalty program: percents, delays, hold life, enrolment, clawback policy,
        bonuses and tiers.

        The settings every quote, commit and return is computed with (docs/api.md#money, #expiry,
        #tiers): accrual and redemption percents as decimal strings, the accrual delay, how long a
        hold lives, whether enrolment needs a confirmed OTP, the clawback policy, points' lifetime
        and reminder, the welcome and birthday bonuses, the tiers (by minSpend) with their window,
        and how many days back a register may send a sale it made offline.
        """
        return json_response(settings.program_as_json(
            companies.get_program(request_session(), g.company_id)), 200)

    @blp.operation("updateProgram", scope="program:write", idempotency=(8, 100),
                   idempotency_required=False)
    @blp.arguments(UpdateProgramRequest)
    @blp.response(200, ProgramResponse)
    def patch(self, body):
        """Change any of the program's settings; emits program.updated.

        Give at least one setting; the others stay as they are, and `null` is a value for
        pointsLifetimeDays (points never expire), expiryReminderDays (no reminder) and
        tierWindowDays (all time). A non-empty `tiers` list replaces the tiers: one has minSpend
        "0.00", minSpends are distinct, names unique, else a 422 on `body.tiers`. A new lifetime
        touches only lots credited later. The answer shows the whole program; each change emits
        `program.updated`. The Idempotency-Key is optional.
        """
        program = settings.change_program(request_session(), g.company_id, now=utcnow(),
                                          actor=key_actor(), **program_changes(body))
        return json_response(settings.program_as_json(program), 200)


@blp.route("/subscription")
class SubscriptionView(MethodView):
    @blp.operation("getSubscription", scope="subscription:read")
    @blp.response(200, SubscriptionResponse)
    def get(self):
        """Tariff, register limit, active terminals, status and access dates.

        What the tariff allows: `registerLimit` caps the ACTIVE terminals (`activeTerminals` counts
        them). The subscription is stopped when its status is SUSPENDED or CANCELLED or
        `accessUntil` has passed; then holds and commits answer 403 `subscription_inactive` (a
        release still works) and quotes say SUBSCRIPTION_INACTIVE. Read only: the operator changes
        it.
        """
        session = request_session()
        subscription = companies.get_subscription(session, g.company_id)
        subscription.active_terminals = companies.count_active_terminals(session, g.company_id)
        return subscription
