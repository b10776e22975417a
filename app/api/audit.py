"""The audit record: who changed what, from where."""
from __future__ import annotations

from flask import g
from flask.views import MethodView

from app.api.audit_schemas import AuditEventArgs, AuditEventPageResponse
from app.api.base import Blueprint
from app.database.engine import request_session
from app.services.audit import events

blp = Blueprint("audit", __name__, url_prefix="/v1", description="Audit record")


@blp.route("/audit-events")
class AuditEvents(MethodView):
    @blp.operation("listAuditEvents", scope="audit:read")
    @blp.arguments(AuditEventArgs, location="query")
    @blp.response(200, AuditEventPageResponse)
    def get(self, args):
        """Every change to the company, newest first: when, who, what, which, from where.

        Changes made in the back office (`actor.kind` STAFF), with an API key (CREDENTIAL) or by
        the operator's commands (OPERATOR). Filter by `action`, `actorKind`, and `from` (included)
        and `to` (excluded), RFC 3339 instants.
        """
        found, total = events.events(request_session(), g.company_id, offset=args["offset"],
                                     limit=args["limit"], action=args.get("action"),
                                     actor_kind=args.get("actor_kind"),
                                     since=args.get("since"), until=args.get("until"))
        return {"items": [events.as_record(row) for row in found], "offset": args["offset"],
                "limit": args["limit"], "total": total}
