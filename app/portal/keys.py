"""The owner's API keys: issue one (the key shown this once), rotate it with a grace for the
old key, revoke it — the services the API's /v1/api-credentials uses, with its schemas. A key
gets no scope the member could not hold (grantable_scopes)."""
from __future__ import annotations

from flask import render_template, request
from flask_babel import gettext as _
from flask_login import current_user

from app.api.credentials_schemas import CreateCredentialRequest, RotateCredentialRequest
from app.database.engine import request_session, utcnow
from app.portal import forms
from app.portal.access import company_id, requires, settings, staff_actor
from app.portal.blueprint import bp
from app.services.staff.roles import grantable_scopes
from app.services.tenancy import credentials
from app.services.tenancy.scopes import ALL_SCOPES


def _page(*, secret=None, errors=(), status=200, form=None):
    return render_template(
        "portal/keys.html", keys=credentials.list_credentials(request_session(), company_id()),
        scopes=ALL_SCOPES, key=secret, errors=errors, form=form or {}), status


def _held() -> frozenset[str]:
    return grantable_scopes(current_user.role)


@bp.get("/keys")
@requires("keys")
def keys():
    return _page()


@bp.post("/keys")
@requires("keys")
def issue_key():
    typed = {"name": request.form.get("name", ""), "scopes": request.form.getlist("scopes")}

    def change():
        body = CreateCredentialRequest().load(typed)
        return credentials.issue_credential(
            request_session(), company_id(), body["name"], body["scopes"],
            pepper=settings().api_key_pepper, now=utcnow(), actor=staff_actor(),
            granted_by=_held())
    return forms.shown_once(change, _page, 201, form=request.form)


@bp.post("/keys/<credential_id>/rotate")
@requires("keys")
def rotate_key(credential_id: str):
    typed = {"gracePeriodSeconds": forms.whole(request.form.get("gracePeriodSeconds", "0"))}

    def change():
        body = RotateCredentialRequest().load(typed)
        return credentials.rotate_credential(
            request_session(), company_id(), credential_id,
            grace_seconds=body["gracePeriodSeconds"], pepper=settings().api_key_pepper,
            now=utcnow(), actor=staff_actor(), changed_by=_held())
    return forms.shown_once(change, _page, 201)


@bp.post("/keys/<credential_id>/revoke")
@requires("keys")
def revoke_key(credential_id: str):
    def change():
        credentials.revoke_credential(request_session(), company_id(), credential_id,
                                      now=utcnow(), actor=staff_actor(), changed_by=_held())
    return forms.saved(change, _("The key is revoked."), "portal.keys", _page)
