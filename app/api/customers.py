"""Customers: enrolment, the directory and search by phone."""
from __future__ import annotations

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.customers_schemas import (CreateCustomerRequest, CustomerDirectoryArgs,
                                       CustomerDirectoryResponse, CustomerResponse, CustomerSearchArgs)
from app.database.engine import request_session, utcnow
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
        """Enrol a customer by Russian phone number, with an empty bonus account.

        The phone is read as Russian (`8 (912) 345-67-89`, `+7 912 345 67 89` and `9123456789` are
        all `+79123456789`); an invalid one is a 422 on `body.phone`. A phone enrolled already is a
        409 `customer_exists` whose body carries the `customerId`, so a retried enrolment learns the
        customer. When the program requires OTP, `enrollmentChallengeId` must name a confirmed,
        unused ENROLLMENT challenge for that phone, else 409 `enrollment_challenge_required`.
        Credits the welcome bonus, if any; emits `customer.created`.
        """
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
        """One page of the directory, with balances: text search and a floor on available.

        An offset page (`page`, `pageSize`) with each customer's balances. `query` matches part of
        the phone's digits or of the first or last name, any case; `minimumAvailable` keeps
        customers whose available balance is at least that amount. Changes nothing.
        """
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
        """The customer with this phone (any spelling), with the current balance.

        `phone` is read as at enrolment, so any spelling of the number finds the customer; none in
        the company is a 404. The balance shown has due maturations and expiries applied.
        """
        return present(profiles.find_by_phone(request_session(), g.company_id, args["phone"],
                                              utcnow()))
