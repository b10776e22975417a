"""What the API declared on a view: its operation (scopes, idempotency, rate class), read by the
request's checks at the edge and by the interface document."""
from __future__ import annotations

from flask import Flask


def declared_operation(app: Flask, endpoint: str | None, method: str):
    """The operation declared on the view that serves `endpoint` and `method` (an API view
    carries it as `operation`), or None: a route of no API operation."""
    view = app.view_functions.get(endpoint) if endpoint else None
    if view is None:
        return None
    view_class = getattr(view, "view_class", None)
    func = getattr(view_class, method.lower(), None) if view_class else view
    return getattr(func, "operation", None)
