"""Liveness and readiness probes: no key, unversioned."""
from __future__ import annotations

from flask import current_app
from flask.views import MethodView
from sqlalchemy import text

import marshmallow as ma

from app.api.base import Blueprint, ResponseSchema
from app.services.errors import DomainError

blp = Blueprint("system", __name__, description="Liveness and readiness probes")


class ProbeResponse(ResponseSchema):
    status = ma.fields.String(required=True)


@blp.route("/health")
class Health(MethodView):
    @blp.operation("checkLiveness", scope=None, group="system")
    @blp.response(200, ProbeResponse)
    def get(self):
        """Liveness: the process answers; the database is not touched.

        For the orchestrator's liveness probe: no key, no database, nothing changed. A 200 means the
        process serves requests; it says nothing about PostgreSQL (see /ready).
        """
        return {"status": "ok"}


@blp.route("/ready")
class Ready(MethodView):
    @blp.operation("checkReadiness", scope=None, group="system", errors=("not_ready",))
    @blp.response(200, ProbeResponse)
    def get(self):
        """Readiness: the database answers a query.

        For the load balancer's readiness probe: no key. 200 once a query on the database succeeds;
        503 `not_ready` while it does not, so traffic waits instead of failing.
        """
        engine = current_app.extensions["engine"]
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception as exc:
            raise DomainError("the database does not answer", code="not_ready", status=503) from exc
        return {"status": "ok", "database": "ok"}
