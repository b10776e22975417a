"""The caller's company, its loyalty program and its subscription (read only)."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.company_schemas import CompanyResponse, ProgramResponse, SubscriptionResponse
from app.db import request_session
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
        """The loyalty program: percents, delays, hold life, enrolment and clawback policy."""
        return companies.get_program(request_session(), g.company_id)


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
