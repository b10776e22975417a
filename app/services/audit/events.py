"""Recording a change and reading the record back. The edges say who acts (an `Actor`); the
service that makes the change records it, in the change's own transaction, so a change that
rolls back leaves no record and no change goes unrecorded whichever edge it came through."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import AuditEvent

STAFF, CREDENTIAL, OPERATOR = "STAFF", "CREDENTIAL", "OPERATOR"
ACTOR_KINDS = (STAFF, CREDENTIAL, OPERATOR)
ACTIONS = (
    "reward.adjusted", "credential.issued", "credential.rotated", "credential.revoked",
    "program.updated", "campaign.created", "campaign.updated", "campaign.ended",
    "store.created", "terminal.created", "terminal.updated", "webhook_endpoint.created",
    "webhook_endpoint.deleted", "webhook_endpoint.secret_rotated", "webhook_event.replayed",
    "staff.added", "staff.role_changed", "staff.removed", "staff.signed_in",
    "staff.sign_in_failed",
)


@dataclass(frozen=True)
class Actor:
    """Who makes a change: a staff member, an API key, or the operator at the command line;
    `address` is the client's (behind a trusted proxy, the one it forwards for)."""

    kind: str
    id: str | None
    name: str | None
    address: str | None = None

    def as_json(self) -> dict:
        return {"kind": self.kind, "id": self.id, "name": self.name}


def operator(name: str | None = None) -> Actor:
    return Actor(OPERATOR, None, name or "operator")


def record(session: Session, company_id: str, actor: Actor | None, action: str,
           target_type: str, target_id: str, *, at: datetime | None = None) -> None:
    """One line of the record. No actor is the service acting on its own (a job): nobody to
    name, nothing recorded."""
    if actor is None:
        return
    assert action in ACTIONS, action
    extra = {} if at is None else {"created_at": at}
    session.add(AuditEvent(company_id=company_id, actor_kind=actor.kind, actor_id=actor.id,
                           actor_name=actor.name, action=action, target_type=target_type,
                           target_id=target_id, address=actor.address, **extra))
    session.flush()


def events(session: Session, company_id: str, *, offset: int, limit: int,
           action: str | None = None, actor_kind: str | None = None,
           since: datetime | None = None, until: datetime | None = None,
           counted: bool = True) -> tuple[list[AuditEvent], int]:
    """One page of the company's record, newest first, and how many match. Not `counted`,
    the number is the page's end, one more when more follow: a company's record grows without
    end, and counting it all costs more as it does."""
    where = [AuditEvent.company_id == company_id]
    if action:
        where.append(AuditEvent.action == action)
    if actor_kind:
        where.append(AuditEvent.actor_kind == actor_kind)
    if since is not None:
        where.append(AuditEvent.created_at >= since)
    if until is not None:
        where.append(AuditEvent.created_at < until)
    rows = list(session.scalars(select(AuditEvent).where(*where)
                                .order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())
                                .offset(offset).limit(limit if counted else limit + 1)))
    if not counted:
        return rows[:limit], offset + len(rows)
    total = (offset + len(rows) if rows and len(rows) < limit
             else session.scalar(select(func.count()).select_from(AuditEvent).where(*where)))
    return rows, total


def as_record(row: AuditEvent) -> dict:
    return {"id": row.id, "at": row.created_at, "action": row.action, "address": row.address,
            "actor": {"kind": row.actor_kind, "id": row.actor_id, "name": row.actor_name},
            "target": {"type": row.target_type, "id": row.target_id}}


def authors(session: Session, company_id: str, target_ids: list[str]) -> dict[str, dict]:
    """Who made each of these targets ({kind, name} by target id), for those someone made."""
    if not target_ids:
        return {}
    rows = session.execute(select(AuditEvent.target_id, AuditEvent.actor_kind,
                                  AuditEvent.actor_name)
                           .where(AuditEvent.company_id == company_id,
                                  AuditEvent.target_id.in_(target_ids)))
    return {row.target_id: {"kind": row.actor_kind, "name": row.actor_name} for row in rows}
