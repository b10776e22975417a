"""Who is signed in, and what their role lets them do: every portal view names its action
(`@requires("customers")`), and the roles' one table (app/services/staff/roles.py) answers."""
from __future__ import annotations

from functools import wraps

from flask import abort, current_app, redirect, request, url_for
from flask_login import current_user, login_required

from app.database.engine import request_session, utcnow
from app.portal.blueprint import bp
from app.portal.security import csrf, login_manager
from app.services.audit import events as audit
from app.services.staff import roles, signing_in
from app.web.actors import request_address


class StaffUser:
    """Flask-Login's user: a signed-in session's member. Its id is the session's token, so
    Flask-Login keeps nothing but that token in the cookie, and ending the session on the
    server signs the cookie out."""

    is_authenticated = True
    is_active = True
    is_anonymous = False

    def __init__(self, signed_in: signing_in.SignedIn):
        self.signed_in = signed_in

    def get_id(self) -> str:
        return self.signed_in.token

    def __getattr__(self, name: str):
        return getattr(self.signed_in, name)

    def may(self, action: str) -> bool:
        return roles.may(self.signed_in.role, action)


@bp.before_request
def _forms_carry_their_token() -> None:
    """Every POST of the portal carries its session's CSRF token (field or X-CSRFToken)."""
    if request.method == "POST":
        csrf.protect()


@login_manager.user_loader
def load_member(token: str) -> StaffUser | None:
    signed_in = signing_in.current(request_session(), token, utcnow())
    return None if signed_in is None else StaffUser(signed_in)


def safe_next(path: str | None) -> str | None:
    """`next` only when it is a path under /portal/ (never another site, nor a way out)."""
    if (not path or not path.startswith("/portal/") or "\\" in path or "/.." in path
            or any(ord(c) < 32 for c in path)):
        return None
    return path


@login_manager.unauthorized_handler
def to_sign_in():
    here = request.full_path.rstrip("?") if request.query_string else request.path
    return redirect(url_for("portal.sign_in", next=safe_next(here)), 303)


def requires(action: str):
    """The view is for a signed-in member whose role may take `action`; 403 otherwise."""
    def decorate(view):
        @wraps(view)
        def checked(*args, **kwargs):
            if not current_user.may(action):
                abort(403)
            return view(*args, **kwargs)
        return login_required(checked)
    return decorate


def staff_actor() -> audit.Actor:
    return audit.Actor(audit.STAFF, current_user.staff_id, current_user.name, request_address())


def company_id() -> str:
    return current_user.company_id


def settings():
    return current_app.config["SETTINGS"]


def back_to(endpoint: str, **values):
    return redirect(url_for(endpoint, **values), 303)


def offset_arg() -> int:
    """The page's `offset` query parameter; anything but a whole number is the first page."""
    try:
        return min(max(int(request.args.get("offset", 0)), 0), 1_000_000)
    except ValueError:
        return 0
