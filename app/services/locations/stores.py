"""Stores, the place directory, terminals (registers) and the cashier catalog."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, literal, select
from sqlalchemy.orm import Session

from app.database.engine import insert_of
from app.models import Cashier, Store, Terminal
from app.models.base import new_id
from app.services.audit import events as audit
from app.services.errors import Conflict, NotFound
from app.services.tenancy import companies

MINIAPP = "MINIAPP"
CHANNELS = (MINIAPP,)
TERMINAL_STATES = ("ACTIVE", "DISABLED")


# the page envelope of docs/api.md#conventions: {items, page, pageSize, total}
Page = dict[str, Any]


def _page(session: Session, query, page: int, page_size: int) -> Page:
    """One page of `query` and the total it would give unpaged. A page past the end costs
    only the count (and a huge page number can never overflow the database's OFFSET)."""
    total = session.scalar(select(func.count()).select_from(query.order_by(None).subquery())) or 0
    offset = (page - 1) * page_size
    items = list(session.scalars(query.offset(offset).limit(page_size))) if offset < total else []
    return {"items": items, "page": page, "pageSize": page_size, "total": total}


# Stores

def create_store(session: Session, company_id: str, *, name: str, address: str, city: str,
                 latitude: float, longitude: float, channels: list[str], timezone: str,
                 now: datetime, actor: audit.Actor | None = None) -> Store:
    store = Store(company_id=company_id, name=name, address=address, city=city,
                  latitude=latitude, longitude=longitude, channels=" ".join(sorted(set(channels))),
                  timezone=timezone, active=True, created_at=now)
    session.add(store)
    session.flush()
    audit.record(session, company_id, actor, "store.created", "store", store.id, at=now)
    return store


def get_store(session: Session, company_id: str, store_id: str) -> Store:
    store = session.scalar(select(Store).where(Store.company_id == company_id, Store.id == store_id))
    if store is None:
        raise NotFound("store")
    return store


def list_stores(session: Session, company_id: str, *, page: int, page_size: int) -> Page:
    query = (select(Store).where(Store.company_id == company_id)
             .order_by(Store.created_at, Store.id))
    return _page(session, query, page, page_size)


def store_channels(store: Store) -> list[str]:
    return store.channels.split()


def _published_to(channel: str):
    # channels is space-separated: match the whole word, never a longer channel name.
    return (literal(" ") + Store.channels + literal(" ")).contains(f" {channel} ")


def place_directory(session: Session, company_id: str) -> list[dict]:
    """Cities, each with its ACTIVE stores published to MINIAPP, both by name; a city with
    no such store is not listed."""
    stores = session.execute(
        select(Store.id, Store.name, Store.address, Store.city, Store.latitude, Store.longitude)
        .where(Store.company_id == company_id, Store.active.is_(True), _published_to(MINIAPP))
        .order_by(Store.city, Store.name, Store.id))
    cities: dict[str, list] = {}
    for store in stores:
        cities.setdefault(store.city, []).append(store)
    return [{"name": city, "stores": members} for city, members in cities.items()]


# Terminals

@dataclass(frozen=True)
class RegisterTerminal:
    """The terminal a register's X-Loyalty-Pos-Key names (found with its API key)."""

    id: str
    store_id: str
    name: str
    pos_key: str
    active: bool = True


def get_terminal(session: Session, company_id: str, terminal_id: str, *,
                 for_update: bool = False) -> Terminal:
    query = select(Terminal).where(Terminal.company_id == company_id, Terminal.id == terminal_id)
    terminal = session.scalar(query.with_for_update() if for_update else query)
    if terminal is None:
        raise NotFound("terminal")
    return terminal


def list_terminals(session: Session, company_id: str, *, page: int, page_size: int,
                   store_id: str | None = None) -> Page:
    query = select(Terminal).where(Terminal.company_id == company_id)
    if store_id is not None:
        get_store(session, company_id, store_id)
        query = query.where(Terminal.store_id == store_id)
    return _page(session, query.order_by(Terminal.created_at, Terminal.id), page, page_size)


def _take_register_slot(session: Session, company_id: str, *, pos_key: str | None = None) -> None:
    """Refuse one more ACTIVE terminal beyond the subscription's register limit.

    The subscription row is locked first, so every activation of the company waits for the
    one before it to commit and then counts what that one left: the limit holds under
    concurrency. The same count tells whether `pos_key` is already taken."""
    subscription = companies.get_subscription(session, company_id, for_update=True)
    active = func.count().filter(Terminal.state == "ACTIVE")
    with_key = func.count().filter(Terminal.pos_key == pos_key) if pos_key is not None else literal(0)
    active_count, key_count = session.execute(
        select(active, with_key).where(Terminal.company_id == company_id)).one()
    if key_count:
        raise Conflict("another terminal of this company already has this posKey",
                       code="pos_key_in_use")
    if active_count >= subscription.register_limit:
        raise Conflict(f"the subscription allows {subscription.register_limit} active terminals",
                       code="terminal_limit_reached")


def create_terminal(session: Session, company_id: str, *, store_id: str, name: str,
                    pos_key: str | None, now: datetime, actor: audit.Actor | None = None) -> Terminal:
    """A new ACTIVE register bound to a store of the company."""
    get_store(session, company_id, store_id)
    _take_register_slot(session, company_id, pos_key=pos_key)
    terminal = Terminal(company_id=company_id, store_id=store_id, name=name, state="ACTIVE",
                        pos_key=pos_key, created_at=now, updated_at=now)
    session.add(terminal)
    session.flush()
    audit.record(session, company_id, actor, "terminal.created", "terminal", terminal.id, at=now)
    return terminal


def update_terminal(session: Session, company_id: str, terminal_id: str, *, now: datetime,
                    name: str | None = None, state: str | None = None,
                    store_id: str | None = None, actor: audit.Actor | None = None) -> Terminal:
    """Rename, move to another store of the company, disable (frees a register slot) or
    enable again (takes one, within the limit)."""
    if state is not None and state not in TERMINAL_STATES:
        raise ValueError(f"state must be one of {', '.join(TERMINAL_STATES)}")
    terminal = get_terminal(session, company_id, terminal_id, for_update=True)
    if store_id is not None and store_id != terminal.store_id:
        get_store(session, company_id, store_id)
    if state == "ACTIVE" and terminal.state != "ACTIVE":
        _take_register_slot(session, company_id)
    changes = {"name": name, "state": state, "store_id": store_id}
    changed = False
    for field, value in changes.items():
        if value is not None and getattr(terminal, field) != value:
            setattr(terminal, field, value)
            changed = True
    if changed:
        terminal.updated_at = now
        session.flush()
        audit.record(session, company_id, actor, "terminal.updated", "terminal", terminal.id,
                     at=now)
    return terminal


# Cashiers

def _cashier_by_external_id(session: Session, company_id: str, external_id: str) -> Cashier | None:
    return session.scalar(select(Cashier).where(Cashier.company_id == company_id,
                                                Cashier.external_id == external_id))


def upsert_cashier(session: Session, company_id: str, external_id: str, name: str,
                   now: datetime) -> Cashier:
    """The cashier catalog entry for a register's cashier block, created or renamed.

    Two registers announcing the same new cashier at once both succeed: the insert skips
    on the (company_id, external_id) key and both read the one row."""
    cashier = _cashier_by_external_id(session, company_id, external_id)
    if cashier is None:
        session.execute(insert_of(session, Cashier).values(
            company_id=company_id, id=new_id(), external_id=external_id, name=name, created_at=now,
        ).on_conflict_do_nothing(index_elements=["company_id", "external_id"]))
        cashier = _cashier_by_external_id(session, company_id, external_id)
    if cashier.name != name:
        cashier.name = name
        session.flush()
    return cashier


def list_cashiers(session: Session, company_id: str, *, page: int, page_size: int,
                  query: str | None = None) -> Page:
    """The safe cashier catalog by name; `query` is a case-insensitive part of the name."""
    statement = select(Cashier).where(Cashier.company_id == company_id)
    if query:
        statement = statement.where(
            func.lower(Cashier.name).contains(query.lower(), autoescape=True))
    return _page(session, statement.order_by(Cashier.name, Cashier.id), page, page_size)
