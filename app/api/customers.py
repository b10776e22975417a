"""Customers: enrolment, the directory and search by phone."""
from __future__ import annotations

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.customers_schemas import (CreateCustomerRequest, CustomerDirectoryArgs,
                                       CustomerDirectoryResponse, CustomerResponse, CustomerSearchArgs)
from app.db import request_session, utcnow
from app.services.customers import profiles

blp = Blueprint("customers", __name__, url_prefix="/v1", description="Customers")


def _public_base_url() -> str:
    return current_app.config["SETTINGS"].public_base_url


def present(found: profiles.CustomerBalance) -> dict:
    return {"customer": found.customer, "balance": found.balance,
            "card_url": profiles.card_url(_public_base_url(), found.customer.card_token)}


@blp.route("/customers")
class Customers(MethodView):
    @blp.operation("createCustomer", scope="customers:write",
                   errors=("customer_exists", "enrollment_challenge_required"))
    @blp.arguments(CreateCustomerRequest)
    @blp.response(201, CustomerResponse)
    def post(self, body):
        """Enrol a customer by Russian phone number, with an empty bonus account."""
        created = profiles.enrol_customer(
            request_session(), g.company_id, phone=body["phone"], first_name=body["firstName"],
            last_name=body.get("lastName"), birth_date=body.get("birthDate"), email=body.get("email"),
            enrollment_challenge_id=body.get("enrollmentChallengeId"),
            public_base_url=_public_base_url(), now=utcnow())
        return present(created)

    @blp.operation("listCustomers", scope="customers:read")
    @blp.arguments(CustomerDirectoryArgs, location="query")
    @blp.response(200, CustomerDirectoryResponse)
    def get(self, args):
        """One page of the directory, with balances: text search and a floor on available."""
        found, total = profiles.directory(
            request_session(), g.company_id, query=args.get("query"),
            minimum_available=args.get("minimumAvailable"), offset=args["offset"],
            limit=args["limit"], now=utcnow())
        return {"items": [present(f) for f in found], "offset": args["offset"],
                "limit": args["limit"], "total": total}


@blp.route("/customers/search")
class CustomerSearch(MethodView):
    @blp.operation("findCustomerByPhone", scope="customers:read", errors=("not_found",))
    @blp.arguments(CustomerSearchArgs, location="query")
    @blp.response(200, CustomerResponse)
    def get(self, args):
        """The customer with this phone (any spelling), with the current balance."""
        return present(profiles.find_by_phone(request_session(), g.company_id, args["phone"],
                                              utcnow()))
