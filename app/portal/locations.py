"""Stores, terminals and cashiers: a store created, a terminal created, renamed, disabled or
enabled, moved to another store (the subscription's register limit shown and held), the
cashiers the registers announced — through the API's schemas and services."""
from __future__ import annotations

from functools import partial

from flask import render_template, request
from flask_babel import gettext as _

from app.api.stores_schemas import CreateStoreRequest
from app.api.terminals_schemas import CreateTerminalRequest, UpdateTerminalRequest
from app.database.engine import request_session, utcnow
from app.portal import forms
from app.portal.access import company_id, requires, staff_actor
from app.portal.blueprint import bp
from app.services.locations import stores
from app.services.tenancy import companies

SHOWN = 100


def _page(*, errors=(), status=200, store_form=None, terminal_form=None):
    db, company = request_session(), company_id()
    listed = {name: lister(db, company, page=1, page_size=SHOWN) for name, lister in (
        ("stores", stores.list_stores), ("terminals", stores.list_terminals),
        ("cashiers", stores.list_cashiers))}
    return render_template(
        "portal/locations.html", errors=errors, shown=SHOWN, **listed,
        limit=companies.get_subscription(db, company).register_limit,
        active=companies.count_active_terminals(db, company),
        store_form=store_form or {}, terminal_form=terminal_form or {}), status


def _saved(change, message: str, **shown):
    return forms.saved(change, message, "portal.locations", partial(_page, **shown))


@bp.get("/locations")
@requires("locations")
def locations():
    return _page()


@bp.post("/locations/stores")
@requires("locations")
def create_store():
    form = request.form
    typed = {"name": form.get("name", ""), "address": form.get("address", ""),
             "city": form.get("city", ""), "latitude": forms.number(form.get("latitude", "")),
             "longitude": forms.number(form.get("longitude", "")),
             "channels": form.getlist("channels"),
             "timezone": form.get("timezone", "").strip() or "Europe/Moscow"}

    def change():
        stores.create_store(request_session(), company_id(), now=utcnow(), actor=staff_actor(),
                            **CreateStoreRequest().load(typed))
    return _saved(change, _("The store is created."), store_form=form)


@bp.post("/locations/terminals")
@requires("locations")
def create_terminal():
    form = request.form
    typed = {"storeId": form.get("storeId", ""), "name": form.get("name", ""),
             "posKey": form.get("posKey") or None}

    def change():
        body = CreateTerminalRequest().load(typed)
        stores.create_terminal(request_session(), company_id(), store_id=body["storeId"],
                               name=body["name"], pos_key=body["posKey"], now=utcnow(),
                               actor=staff_actor())
    return _saved(change, _("The terminal is registered."), terminal_form=form)


@bp.post("/locations/terminals/<terminal_id>")
@requires("locations")
def change_terminal(terminal_id: str):
    stores.get_terminal(request_session(), company_id(), terminal_id)  # another's: 404
    typed = {name: request.form[name].strip() for name in ("name", "state", "storeId")
             if request.form.get(name, "").strip()}

    def change():
        body = UpdateTerminalRequest().load(typed)
        stores.update_terminal(request_session(), company_id(), terminal_id, now=utcnow(),
                               actor=staff_actor(), name=body.get("name"),
                               state=body.get("state"), store_id=body.get("storeId"))
    return _saved(change, _("The terminal is changed."))
