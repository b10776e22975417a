"""The portal's first page: what the member's role opens to them."""
from __future__ import annotations

from flask import render_template
from flask_login import login_required

from app.portal.blueprint import bp


@bp.get("/")
@login_required
def home():
    return render_template("portal/home.html")
