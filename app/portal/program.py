"""The program page: its settings, tiers, bonuses and expiry (the change PATCH /v1/program
makes, through the same schema and service), and the campaigns — create, change, end — with
the API's rules and messages shown in the form."""
from __future__ import annotations

from functools import partial

from flask import flash, render_template, request
from flask_babel import gettext as _

from app.api.campaigns_schemas import CreateCampaignRequest, UpdateCampaignRequest
from app.api.company_schemas import UpdateProgramRequest, program_changes
from app.database.engine import request_session, utcnow
from app.portal import forms
from app.portal.access import back_to, company_id, requires, staff_actor
from app.portal.blueprint import bp
from app.services.program import campaigns, settings
from app.services.tenancy import companies
from app.services.tenancy.companies import CLAWBACK_POLICIES

CAMPAIGNS_SHOWN = 50
PERCENTS = ("accrualPercent", "maxRedeemPercent", "welcomeBonus", "birthdayBonus")
WHOLE = ("accrualDelayDays", "holdTtlSeconds", "offlineSaleWindowDays")
# Left empty, these mean "never" (points never expire, no reminder, tiers over all time).
NULLABLE = ("pointsLifetimeDays", "expiryReminderDays", "tierWindowDays")
TIER_ROWS_SPARE = 2


def _page(*, errors=(), status=200, program_form=None, campaign_form=None):
    db = request_session()
    program = settings.program_as_json(companies.get_program(db, company_id()))
    listed = campaigns.list_campaigns(db, company_id(), page=1, page_size=CAMPAIGNS_SHOWN)
    tiers = (program_form or {}).get("tiers", program["tiers"])
    return render_template(
        "portal/program.html", program=program_form or program, errors=errors,
        tiers=list(tiers) + [{}] * TIER_ROWS_SPARE, policies=CLAWBACK_POLICIES,
        campaigns=listed["items"], campaign_form=campaign_form or {}), status


def _program_body(form) -> dict:
    body = {name: forms.decimal(form.get(name, "")) for name in PERCENTS}
    body |= {name: forms.whole(form.get(name, "")) for name in WHOLE}
    body |= {name: forms.whole(form[name]) if form.get(name, "").strip() else None
             for name in NULLABLE}
    body |= {"clawbackPolicy": form.get("clawbackPolicy", ""),
             "enrollmentRequiresOtp": forms.yes_no(form.get("enrollmentRequiresOtp", ""))}
    names, spends, percents = (form.getlist(field) for field in
                               ("tierName", "tierMinSpend", "tierAccrualPercent"))
    tiers = [{"name": name.strip(), "minSpend": forms.decimal(spend),
              "accrualPercent": forms.decimal(percent)}
             for name, spend, percent in zip(names, spends, percents)
             if name.strip() or spend.strip() or percent.strip()]
    return body | {"tiers": tiers}


def _saved(change, message: str, **shown):
    return forms.saved(change, message, "portal.program", partial(_page, **shown))


@bp.get("/program")
@requires("program")
def program():
    return _page()


@bp.post("/program")
@requires("program")
def change_program():
    typed = _program_body(request.form)

    def change():
        settings.change_program(request_session(), company_id(), now=utcnow(),
                                actor=staff_actor(),
                                **program_changes(UpdateProgramRequest().load(typed)))
    return _saved(change, _("The program is changed."), program_form=typed)


def _listed(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


@bp.post("/program/campaigns")
@requires("program")
def create_campaign():
    form = request.form
    typed = {"name": form.get("name", ""), "startsAt": forms.moment(form.get("startsAt", "")),
             "endsAt": forms.moment(form.get("endsAt", "")),
             "accrualPercent": forms.decimal(form.get("accrualPercent", "")),
             **{name: _listed(form.get(name, "")) for name in ("skus", "categories", "storeIds")}}

    def change():
        body = CreateCampaignRequest().load(typed)
        campaigns.create_campaign(
            request_session(), company_id(), name=body["name"], starts_at=body["startsAt"],
            ends_at=body["endsAt"], accrual_bp=body["accrualPercent"], skus=body["skus"],
            categories=body["categories"], store_ids=body["storeIds"], now=utcnow(),
            actor=staff_actor())
    return _saved(change, _("The campaign is created."), campaign_form=form)


@bp.post("/program/campaigns/<campaign_id>")
@requires("program")
def change_campaign(campaign_id: str):
    db = request_session()
    campaigns.get_campaign(db, company_id(), campaign_id)  # another company's: 404
    form = request.form
    typed = {name: value for name, value in (
        ("name", form.get("name", "").strip() or None),
        ("endsAt", forms.moment(form["endsAt"]) if form.get("endsAt", "").strip() else None),
        ("active", forms.yes_no(form["active"]) if form.get("active") else None))
        if value is not None}

    def change():
        body = UpdateCampaignRequest().load(typed)
        campaigns.update_campaign(db, company_id(), campaign_id, now=utcnow(),
                                  actor=staff_actor(), name=body.get("name"),
                                  ends_at=body.get("endsAt"), active=body.get("active"))
    return _saved(change, _("The campaign is changed."))


@bp.post("/program/campaigns/<campaign_id>/end")
@requires("program")
def end_campaign(campaign_id: str):
    campaigns.delete_campaign(request_session(), company_id(), campaign_id, now=utcnow(),
                              actor=staff_actor())
    flash(_("The campaign is ended."))
    return back_to("portal.program")
