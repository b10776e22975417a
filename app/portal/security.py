"""What keeps the portal's pages safe: a signed cookie that carries only the server-side
session's token and the CSRF secret (Flask's own cookie session, on /portal alone), Flask-Login
over the `staff_sessions` table, Flask-WTF's CSRF check on every POST, and the headers of
every portal response."""
from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from flask import Flask, Request, Response, request
from flask.sessions import (NullSession, SecureCookieSession, SecureCookieSessionInterface,
                            SessionInterface)
from flask_login import LoginManager
from flask_wtf.csrf import CSRFProtect

from app.config import Settings
from app.web.portal_paths import PREFIX, in_portal

COOKIE = "loyalty_portal"
# Scripts, styles, fonts and images from the service alone; no inline script, no framing.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; "
                           "img-src 'self'; font-src 'self'; connect-src 'self'; "
                           "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
                           "object-src 'none'")
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

csrf = CSRFProtect()
login_manager = LoginManager()


class PortalSessions(SessionInterface):
    """The portal's requests get Flask's signed cookie session; every other request the API's
    null session, as before (no cookie read or written)."""

    def __init__(self, others: SessionInterface):
        self.cookies = SecureCookieSessionInterface()
        self.others = others

    def open_session(self, app: Flask, request: Request):
        if in_portal(request.path):
            return self.cookies.open_session(app, request)
        return self.others.open_session(app, request)

    def save_session(self, app: Flask, session, response: Response) -> None:
        # Only a session this interface opened as a cookie is saved as one (no proxy read: the
        # register's requests pass here too).
        if isinstance(session, SecureCookieSession) and not isinstance(session, NullSession):
            self.cookies.save_session(app, session, response)


def _secret_key(settings: Settings) -> bytes:
    """The cookie's signing key, derived from the key pepper: one secret fewer to keep, and
    a different key from any other use of the pepper."""
    return hmac.new(settings.api_key_pepper.encode(), b"portal session cookie",
                    hashlib.sha256).digest()


def _headers(response: Response) -> Response:
    if in_portal(request._get_current_object().path):  # one proxy lookup, as in app/web/
        response.headers.update(HEADERS)
        response.vary.add("Cookie")
    return response


def register_security(app: Flask, settings: Settings) -> None:
    app.config.update(
        SECRET_KEY=_secret_key(settings),
        SESSION_COOKIE_NAME=COOKIE,
        SESSION_COOKIE_PATH=PREFIX,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.public_base_url.startswith("https://"),
        # Checked on the portal's POSTs only (below), never on the API's.
        WTF_CSRF_CHECK_DEFAULT=False,
        # A token lives as long as the longest session.
        WTF_CSRF_TIME_LIMIT=int(timedelta(hours=12).total_seconds()),
    )
    app.session_interface = PortalSessions(app.session_interface)
    csrf.init_app(app)
    login_manager.init_app(app)  # its loader and its refusal: app/portal/access.py
    app.after_request(_headers)

