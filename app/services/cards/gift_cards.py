"""Gift cards: issued by the operator, looked up at the register by their code.

A code is shown once, at issue; only its digest is kept: HMAC-SHA256 under the server's
pepper, like API keys (a 16-character code from a 30-letter alphabet has ~78 bits, so
it needs no stretching, and the lookup stays one indexed read). Guessing is stopped by
counting each key's misses: more than `MISS_LIMIT` in a window of `MISS_WINDOW_SECONDS`
and every lookup of that key is refused until the window ends, hits included, so a
refused key cannot tell a good guess from a bad one.
"""
from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from redis.exceptions import RedisError
from sqlalchemy import bindparam, case, select
from sqlalchemy.orm import Session

from app.database.engine import conflict_insert
from app.models.gift_card import GiftCard, GiftCardLookupMisses
from app.services.cards import identifiers
from app.services.errors import NotFound, RateLimited
from app.services.tenancy import keys

log = logging.getLogger("app.gift_cards")

STATES = ("ACTIVE", "REDEEMED", "EXPIRED", "BLOCKED")
CURRENCY = "RUB"
MISS_LIMIT = 10
MISS_WINDOW_SECONDS = 60
MAX_ISSUE_COUNT = 10_000


def code_digest(pepper: str, code: str) -> str:
    return keys.key_digest(pepper, code)


def issue_gift_cards(session: Session, company_id: str, *, amount: int, count: int,
                     expires_at: datetime | None, pepper: str, now: datetime) -> list[str]:
    """Issue `count` cards of `amount` kopecks; returns their codes (never stored)."""
    if amount <= 0:
        raise ValueError("the amount must be greater than zero")
    if not 1 <= count <= MAX_ISSUE_COUNT:
        raise ValueError(f"the count must be between 1 and {MAX_ISSUE_COUNT}")
    if expires_at is not None and expires_at <= now:
        raise ValueError("the expiry must be in the future")
    codes: set[str] = set()
    while len(codes) < count:
        codes.add(identifiers.new_gift_code())
    issued = sorted(codes)
    session.add_all(GiftCard(company_id=company_id, code_digest=code_digest(pepper, code),
                             last4=code[-identifiers.GIFT_CODE_VISIBLE:], initial_amount=amount,
                             balance=amount, state="ACTIVE", expires_at=expires_at, created_at=now)
                    for code in issued)
    session.flush()
    return issued


def state_at(card: GiftCard, now: datetime) -> str:
    """An ACTIVE card reads EXPIRED from its `expires_at` on, before any job has marked it."""
    if card.state == "ACTIVE" and card.expires_at is not None and now >= card.expires_at:
        return "EXPIRED"
    return card.state


def masked_code(card: GiftCard) -> str:
    return "*" * (identifiers.GIFT_CODE_LENGTH - identifiers.GIFT_CODE_VISIBLE) + card.last4


class MissCounter(Protocol):
    def blocked_for(self, session: Session, company_id: str, credential_id: str,
                    now: datetime) -> int:
        """Seconds until the key may look up again; 0 when it may now."""

    def record(self, session: Session, company_id: str, credential_id: str,
               now: datetime) -> tuple[int, int]:
        """Count one miss; (misses in the window, seconds until the window ends)."""


_BY_DIGEST = select(GiftCard).where(GiftCard.company_id == bindparam("company_id"),
                                    GiftCard.code_digest == bindparam("digest"))


def find_gift_card(session: Session, company_id: str, credential_id: str, text: str, *,
                   pepper: str, now: datetime, misses: MissCounter) -> GiftCard:
    """The company's card for a code as typed (any case, spaces, dashes), or NotFound;
    RateLimited once the key has missed too often. Another company's code is a miss."""
    wait = misses.blocked_for(session, company_id, credential_id, now)
    if wait:
        raise RateLimited("too many unknown gift-card codes; try again later", wait)
    code = identifiers.normalise_gift_code(text)
    card = None
    if code is not None:
        card = session.scalar(_BY_DIGEST, {"company_id": company_id,
                                           "digest": code_digest(pepper, code)})
    if card is None:
        count, wait = misses.record(session, company_id, credential_id, now)
        if count > MISS_LIMIT:
            raise RateLimited("too many unknown gift-card codes; try again later", wait)
        raise NotFound("gift card")
    return card


def _unix(now: datetime) -> int:
    return int(now.timestamp())


class DatabaseMissCounter:
    """One row per key, reset in place when its window is over: nothing to prune. The row
    is written in the request's own transaction (on SQLite a second connection would wait
    on the lock this request holds), so the caller commits it even when answering 404/429."""

    _STATE = select(GiftCardLookupMisses.misses, GiftCardLookupMisses.window_started).where(
        GiftCardLookupMisses.company_id == bindparam("company_id"),
        GiftCardLookupMisses.credential_id == bindparam("credential_id"))
    _UPSERTS: dict[str, object] = {}

    def blocked_for(self, session, company_id, credential_id, now) -> int:
        row = session.execute(self._STATE, {"company_id": company_id,
                                            "credential_id": credential_id}).first()
        if row is None:
            return 0
        left = row.window_started + MISS_WINDOW_SECONDS - _unix(now)
        return left if row.misses >= MISS_LIMIT and left > 0 else 0

    def record(self, session, company_id, credential_id, now) -> tuple[int, int]:
        statement = self._upsert(session.get_bind().dialect.name)
        moment = _unix(now)
        row = session.execute(statement, {
            "company_id": company_id, "credential_id": credential_id, "now": moment,
            "window_start_after": moment - MISS_WINDOW_SECONDS,
        }).one()
        return row.misses, max(1, row.window_started + MISS_WINDOW_SECONDS - moment)

    @classmethod
    def _upsert(cls, dialect: str):
        statement = cls._UPSERTS.get(dialect)
        if statement is None:
            statement = cls._UPSERTS[dialect] = cls._build_upsert(dialect)
        return statement

    @staticmethod
    def _build_upsert(dialect: str):
        table = GiftCardLookupMisses.__table__
        current = table.c.window_started > bindparam("window_start_after")
        statement = conflict_insert(dialect, table).values(company_id=bindparam("company_id"),
                                         credential_id=bindparam("credential_id"),
                                         window_started=bindparam("now"), misses=1)
        return statement.on_conflict_do_update(
            index_elements=[table.c.company_id, table.c.credential_id],
            set_={"misses": case((current, table.c.misses + 1), else_=1),
                  "window_started": case((current, table.c.window_started),
                                         else_=statement.excluded.window_started)},
        ).returning(table.c.misses, table.c.window_started)


class RedisMissCounter:
    """A key per API key that lives `MISS_WINDOW_SECONDS` from its first miss: INCR and
    EXPIRE NX in one transaction, so a crash between them can never leave a key that
    blocks for ever. Shared by every gunicorn worker. If Redis is away, the database
    counter answers instead: the register keeps working."""

    PREFIX = "loyalty:gift-card-misses:"

    def __init__(self, redis, fallback: DatabaseMissCounter | None = None):
        self.redis = redis
        self.fallback = fallback or DatabaseMissCounter()

    def _key(self, credential_id: str) -> str:
        return self.PREFIX + credential_id

    def blocked_for(self, session, company_id, credential_id, now) -> int:
        try:
            misses, ttl = (self.redis.pipeline(transaction=False)
                           .get(self._key(credential_id)).ttl(self._key(credential_id)).execute())
        except RedisError:
            log.warning("Redis is unavailable; counting gift-card misses in the database")
            return self.fallback.blocked_for(session, company_id, credential_id, now)
        if misses is None or int(misses) < MISS_LIMIT:
            return 0
        return max(1, ttl)

    def record(self, session, company_id, credential_id, now) -> tuple[int, int]:
        key = self._key(credential_id)
        try:
            misses, _, ttl = (self.redis.pipeline(transaction=True)
                              .incr(key).expire(key, MISS_WINDOW_SECONDS, nx=True).ttl(key)
                              .execute())
        except RedisError:
            log.warning("Redis is unavailable; counting gift-card misses in the database")
            return self.fallback.record(session, company_id, credential_id, now)
        return int(misses), max(1, ttl)
