"""Figures an operator watches (docs/api.md#availability), read from the database: read by `flask
ops status` and by the /metrics scrape. Each is one cheap query an index serves."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from app.models import IdempotencyRecord, OutboxEvent


def outbox_backlog(session: Session, now: datetime) -> tuple[int, float | None]:
    """Events waiting for their dispatch, and the age in seconds of the oldest (None when
    none wait)."""
    count, oldest = session.execute(
        select(func.count(), func.min(OutboxEvent.created_at))
        .where(OutboxEvent.dispatched_at.is_(None))).one()
    return count, None if oldest is None else max(0.0, (now - oldest).total_seconds())


def idempotency_record_count(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(IdempotencyRecord))


def database_connections(session: Session) -> dict[str, int]:
    """Connections to this database by state (active, idle, idle in transaction), every
    process's pool together; PostgreSQL only (SQLite has no server to ask)."""
    if session.get_bind().dialect.name != "postgresql":
        return {}
    return dict(session.execute(text(
        "SELECT coalesce(state, 'unknown'), count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND backend_type = 'client backend' "
        "GROUP BY 1")).all())
