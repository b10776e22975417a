"""The owner's audit page: every change to the company, newest first."""
from __future__ import annotations

from flask import render_template

from app.database.engine import request_session
from app.portal.blueprint import bp
from app.portal.access import company_id, offset_arg, requires
from app.services.audit import events

PAGE = 50


@bp.get("/audit")
@requires("audit")
def audit():
    offset = offset_arg()
    found, seen = events.events(request_session(), company_id(), offset=offset, limit=PAGE,
                                counted=False)
    return render_template("portal/audit.html", events=found, total=seen, offset=offset,
                           page=PAGE, uncounted=True)
