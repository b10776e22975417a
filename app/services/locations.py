"""Stores, terminals and the cashier catalog."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Terminal


def active_terminal_by_pos_key(session: Session, company_id: str, pos_key: str) -> Terminal | None:
    """The register a request comes from: one lookup on the (company_id, pos_key) unique key."""
    return session.scalar(select(Terminal).where(
        Terminal.company_id == company_id, Terminal.pos_key == pos_key, Terminal.state == "ACTIVE"))
