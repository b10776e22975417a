"""Error pages: a refused page (403), one not found or another company's (404), a form
without its session's CSRF token (400), a report refused while the company's others run (429)."""
from __future__ import annotations

from flask import render_template
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import Forbidden, NotFound as NoPage

from app.portal.blueprint import bp
from app.services.errors import NotFound, RateLimited


@bp.errorhandler(CSRFError)
def _without_token(error: CSRFError):
    return render_template("portal/error.html", status=400, reason="csrf"), 400


@bp.errorhandler(Forbidden)
def _refused(error):
    return render_template("portal/error.html", status=403, reason="forbidden"), 403


@bp.errorhandler(NoPage)
@bp.errorhandler(NotFound)
def _not_found(error):
    return render_template("portal/error.html", status=404, reason="not_found"), 404


@bp.errorhandler(RateLimited)
def _busy(error: RateLimited):
    return (render_template("portal/error.html", status=429, reason="busy"), 429,
            {"Retry-After": str(error.retry_after)})
