"""Swagger UI's files for /docs, served from the flask-swagger-ui package: the interactive
docs load with no network, at the version the package pins (no CDN, no floating major)."""
from pathlib import Path

import flask_swagger_ui
from flask import Blueprint

URL = "/docs/assets/"
blp = Blueprint("docs_assets", __name__, url_prefix=None,
                static_folder=str(Path(flask_swagger_ui.__file__).parent / "dist"),
                static_url_path=URL.rstrip("/"))
