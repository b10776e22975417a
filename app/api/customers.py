"""Customers: enrolment, the directory and search by phone."""
from __future__ import annotations

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.customers_schemas import (CreateCustomerRequest, CustomerDirectoryArgs,
                                       CustomerDirectoryResponse, CustomerResponse, CustomerSearchArgs)
from app.db import request_session, utcnow
from app.services import customers
from app.services.events import record_event

blp = Blueprint("customers", __name__, url_prefix="/v1", description="Customers")


def card_url(token: str) -> str:
    """The absolute address of the shopper's card page, on the configured public address: the
    request's Host header is the caller's to choose, and the link reaches shoppers."""
    return current_app.config["SETTINGS"].public_base_url + "/cards/" + token


def present(found: customers.CustomerBalance) -> dict:
    return {"customer": found.customer, "balance": found.balance,
            "card_url": card_url(found.customer.card_token)}


@blp.route("/customers")
class Customers(MethodView):
    @blp.operation(scope="customers:write")
    @blp.arguments(CreateCustomerRequest)
    @blp.response(201, CustomerResponse)
    def post(self, body):
        """Enrol a customer by Russian phone number, with an empty bonus account."""
        session = request_session()
        created = customers.enrol_customer(
            session, g.company_id, phone=body["phone"], first_name=body["firstName"],
            last_name=body.get("lastName"), birth_date=body.get("birthDate"), email=body.get("email"),
            enrollment_challenge_id=body.get("enrollmentChallengeId"), now=utcnow())
        view = present(created)
        record_event(session, g.company_id, "customer.created", CustomerResponse().dump(view))
        return view

    @blp.operation(scope="customers:read")
    @blp.arguments(CustomerDirectoryArgs, location="query")
    @blp.response(200, CustomerDirectoryResponse)
    def get(self, args):
        """One page of the directory, with balances: text search and a floor on available."""
        found, total = customers.directory(
            request_session(), g.company_id, query=args.get("query"),
            minimum_available=args.get("minimumAvailable"), offset=args["offset"],
            limit=args["limit"], now=utcnow())
        return {"items": [present(f) for f in found], "offset": args["offset"],
                "limit": args["limit"], "total": total}


@blp.route("/customers/search")
class CustomerSearch(MethodView):
    @blp.operation(scope="customers:read")
    @blp.arguments(CustomerSearchArgs, location="query")
    @blp.response(200, CustomerResponse)
    def get(self, args):
        """The customer with this phone (any spelling), with the current balance."""
        return present(customers.find_by_phone(request_session(), g.company_id, args["phone"],
                                               utcnow()))
