"""The portal's blueprint, which every page module adds its views to."""
from __future__ import annotations

from flask import Blueprint

bp = Blueprint("portal", __name__, url_prefix="/portal", template_folder="templates",
               static_folder="static", static_url_path="/static")
