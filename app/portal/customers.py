"""Customers: the search, the profile (balances, tier, expiring points, activity, the card's
link) and the manual adjustment, posted to the very service the API's adjustments use."""
from __future__ import annotations

import marshmallow as ma
from flask import flash, render_template, request
from flask_babel import gettext as _
from flask_login import current_user

from app.api.rewards_schemas import RewardAdjustmentRequest
from app.database.engine import request_session, utcnow
from app.portal import forms
from app.portal.blueprint import bp
from app.portal.access import (back_to, company_id, offset_arg, requires, settings,
                               staff_actor)
from app.web.languages import money
from app.services.customers import profiles, search
from app.services.errors import DomainError
from app.services.rewards import accounts
from app.services.staff.roles import adjustment_limit

PAGE = 20


@bp.get("/customers")
@requires("customers")
def customers():
    query = request.args.get("q", "")
    offset = offset_arg()
    found, total = search.find_customers(request_session(), company_id(), query, offset=offset,
                                         limit=PAGE, now=utcnow())
    return render_template("portal/customers.html", q=query, found=found, total=total,
                           offset=offset, page=PAGE, uncounted=True)


def _profile(customer_id: str, *, errors: list[str] = (), form: dict | None = None,
             status: int = 200):
    db, now, company = request_session(), utcnow(), company_id()
    customer = search.customer_of(db, company, customer_id)
    standing = accounts.account_standing(db, company, customer_id, now)
    offset = offset_arg()
    entries, total = accounts.activities(db, company, customer_id, offset=offset, limit=PAGE,
                                         now=now)
    page = render_template(
        "portal/customer.html", customer=customer, standing=standing, entries=entries,
        total=total, offset=offset, page=PAGE, errors=errors, form=form or {},
        card_url=profiles.card_url(settings().public_base_url, customer.card_token),
        limit=adjustment_limit(current_user.role, settings().support_adjustment_limit))
    return page, status


@bp.get("/customers/<customer_id>")
@requires("customers")
def customer(customer_id: str):
    return _profile(customer_id)


def _as_request(form) -> dict:
    """The form as the API's adjustment body."""
    body = {"amount": forms.decimal(form.get("amount", "")), "basis": form.get("basis", "")}
    if form.get("expiresAt", "").strip():
        body["expiresAt"] = forms.moment(form["expiresAt"])
    return body


@bp.post("/customers/<customer_id>/adjustments")
@requires("adjust")
def adjust(customer_id: str):
    search.customer_of(request_session(), company_id(), customer_id)  # 404 before anything
    try:
        body = RewardAdjustmentRequest().load(_as_request(request.form))
    except ma.ValidationError as invalid:
        return _profile(customer_id, errors=forms.refusals(invalid), form=request.form,
                        status=422)
    most = adjustment_limit(current_user.role, settings().support_adjustment_limit)
    if most is not None and abs(body["amount"]) > most:
        message = _("Your role may adjust at most %(most)s either way.", most=money(most))
        return _profile(customer_id, errors=[message], form=request.form, status=403)
    try:
        accounts.adjust(request_session(), company_id(), customer_id, amount=body["amount"],
                        basis=body["basis"], expires_at=body.get("expiresAt"), now=utcnow(),
                        actor=staff_actor())
    except DomainError as refused:
        request_session().rollback()
        message = forms.refusal(refused)
        return _profile(customer_id, errors=[message], form=request.form, status=refused.status)
    flash(_("The adjustment is made."))
    return back_to("portal.customer", customer_id=customer_id)
