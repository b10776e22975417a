"""Signing in and out, the welcome link that sets a new member's password, and the language
switch."""
from __future__ import annotations

from flask import redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from flask_login import current_user, login_required, login_user, logout_user

from app.database.engine import request_session, utcnow
from app.models import StaffMember
from app.portal.blueprint import bp
from app.portal.access import StaffUser, safe_next
from app.web.languages import LANGUAGES
from app.services.errors import InvalidField, NotFound, RateLimited
from app.services.staff import members, signing_in
from app.web.actors import request_address


def _begin(signed_in: signing_in.SignedIn, to: str | None):
    """A fresh cookie for the new session: nothing of the one before is carried over but the
    language chosen."""
    language = session.get("locale")
    session.clear()
    if language:
        session["locale"] = language
    login_user(StaffUser(signed_in))
    return redirect(safe_next(to) or url_for("portal.home"), 303)


@bp.get("/login")
def sign_in():
    if current_user.is_authenticated:
        return redirect(url_for("portal.home"), 303)
    return render_template("portal/sign_in.html", next=safe_next(request.args.get("next")))


@bp.post("/login")
def sign_in_with_password():
    email = request.form.get("email", "")
    to = safe_next(request.form.get("next") or request.args.get("next"))
    db = request_session()
    try:
        signed_in = signing_in.sign_in(db, email, request.form.get("password", ""),
                                       address=request_address(), now=utcnow())
    except RateLimited as refused:
        page = render_template("portal/sign_in.html", next=to, email=email,
                               error=_("Too many failed attempts. Try again later."))
        return page, 429, {"Retry-After": str(refused.retry_after)}
    if signed_in is None:
        db.commit()  # the failure counts towards the lockout, though the answer is an error
        page = render_template("portal/sign_in.html", next=to, email=email,
                               error=_("Wrong email or password."))
        return page, 401
    if current_user.is_authenticated:  # signing in again ends the session before
        signing_in.sign_out(db, current_user.get_id())
    return _begin(signed_in, to)


@bp.post("/logout")
@login_required
def sign_out():
    signing_in.sign_out(request_session(), current_user.get_id())
    logout_user()
    session.clear()
    return redirect(url_for("portal.sign_in"), 303)


@bp.route("/welcome/<token>", methods=("GET", "POST"))
def welcome(token: str):
    db, now = request_session(), utcnow()
    member = members.invited_member(db, token, now)  # 404 page for a used or stale link
    if request.method == "GET":
        return render_template("portal/welcome.html", member=member, token=token)
    try:
        member = members.accept_invitation(db, token, request.form.get("password", ""), now)
    except InvalidField as refused:
        return render_template("portal/welcome.html", member=member, token=token,
                               error=refused.detail), 422
    return _begin(signing_in.start_session(db, member, address=request_address(), now=now), None)


@bp.post("/language")
def choose_language():
    language = request.form.get("language")
    if language in LANGUAGES:
        session["locale"] = language
        if current_user.is_authenticated:
            member = request_session().get(StaffMember, (current_user.company_id,
                                                         current_user.staff_id))
            if member is None:
                raise NotFound("staff member")
            member.locale = language
    return redirect(safe_next(request.form.get("next")) or url_for("portal.home"), 303)
