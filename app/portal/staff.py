"""The owner's staff page: invite (the welcome link shown once), change a role, remove."""
from __future__ import annotations

from flask import flash, render_template, request
from flask_babel import gettext as _

from app.database.engine import request_session, utcnow
from app.portal.blueprint import bp
from app.portal.access import back_to, company_id, requires, settings, staff_actor
from app.services.errors import DomainError
from app.services.staff import members
from app.services.staff.roles import ROLES


def welcome_link(token: str) -> str:
    return f"{settings().public_base_url}/portal/welcome/{token}"


def _page(*, link: str | None = None, error: str | None = None, form=None, status: int = 200):
    return render_template("portal/staff.html", staff=members.members(request_session(),
                                                                      company_id()),
                           roles=ROLES, link=link, error=error, form=form or {}), status


@bp.get("/staff")
@requires("staff")
def staff():
    return _page()


@bp.post("/staff")
@requires("staff")
def invite():
    db, now = request_session(), utcnow()
    try:
        member = members.add_member(db, company_id(), email=request.form.get("email", ""),
                                    role=request.form.get("role", ""),
                                    name=request.form.get("name"), actor=staff_actor(), now=now)
    except DomainError as refused:
        db.rollback()
        return _page(error=refused.detail, form=request.form, status=refused.status)
    return _page(link=welcome_link(members.invite(db, member, now)), status=201)


@bp.post("/staff/<staff_id>/role")
@requires("staff")
def change_role(staff_id: str):
    db = request_session()
    member = members.member_of(db, company_id(), staff_id)
    try:
        members.change_role(db, member, request.form.get("role", ""), actor=staff_actor(),
                            now=utcnow())
    except DomainError as refused:
        db.rollback()
        return _page(error=refused.detail, status=refused.status)
    flash(_("The role is changed."))
    return back_to("portal.staff")


@bp.post("/staff/<staff_id>/remove")
@requires("staff")
def remove(staff_id: str):
    db = request_session()
    member = members.member_of(db, company_id(), staff_id)
    members.remove(db, member, actor=staff_actor(), now=utcnow())
    flash(_("The member is removed."))
    return back_to("portal.staff")
