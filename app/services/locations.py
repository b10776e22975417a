"""Stores, terminals and the cashier catalog."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Cashier, Terminal


def active_terminal_by_pos_key(session: Session, company_id: str, pos_key: str) -> Terminal | None:
    """The register a request comes from: one lookup on the (company_id, pos_key) unique key."""
    return session.scalar(select(Terminal).where(
        Terminal.company_id == company_id, Terminal.pos_key == pos_key, Terminal.state == "ACTIVE"))


def upsert_cashier(session: Session, company_id: str, external_id: str, name: str,
                   now: datetime) -> Cashier:
    """The cashier catalog entry for a register's cashier block, created or renamed."""
    cashier = session.scalar(select(Cashier).where(Cashier.company_id == company_id,
                                                   Cashier.external_id == external_id))
    if cashier is None:
        cashier = Cashier(company_id=company_id, external_id=external_id, name=name, created_at=now)
        session.add(cashier)
        session.flush()
    elif cashier.name != name:
        cashier.name = name
    return cashier
