"""Who makes a change through the API, for the audit record: the request's key, by its name,
from the client's address (behind a trusted proxy, the one it forwards for)."""
from __future__ import annotations

from flask import current_app, g, request
from sqlalchemy import select

from app.database.engine import request_session
from app.models import ApiCredential
from app.services.audit import events as audit
from app.web.proxies import client_address


def request_address() -> str | None:
    settings = current_app.config["SETTINGS"]
    return client_address(request.remote_addr, request.headers.get("X-Forwarded-For"),
                          settings.forwarded_allow_ips)


def key_actor() -> audit.Actor:
    holder = g.principal
    name = request_session().scalar(select(ApiCredential.name).where(
        ApiCredential.company_id == holder.company_id, ApiCredential.id == holder.credential_id))
    return audit.Actor(audit.CREDENTIAL, holder.credential_id, name, request_address())
