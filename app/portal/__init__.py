"""The back office in a browser: server-rendered pages under /portal, on the same services as
the API. One module per area, each adding its pages to `bp`; `register_portal` sets up what
they share (the signed-in session, CSRF, the security headers)."""
from __future__ import annotations

from importlib import import_module

from flask import Flask

from app.config import Settings
from app.portal.blueprint import bp

# A new area of the back office is a module here that adds its views to `bp`
# (app/portal/blueprint.py).
PAGE_MODULES = (
    "app.portal.access",
    "app.portal.signing_in",
    "app.portal.dashboard",
    "app.portal.reports",
    "app.portal.program",
    "app.portal.locations",
    "app.portal.keys",
    "app.portal.webhooks",
    "app.portal.customers",
    "app.portal.staff",
    "app.portal.audit",
    "app.portal.errors",
    "app.portal.navigation",
)


def register_portal(app: Flask, settings: Settings) -> None:
    from app.portal.security import register_security

    register_security(app, settings)
    for module in PAGE_MODULES:
        import_module(module)
    app.register_blueprint(bp)
