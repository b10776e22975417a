"""Idempotency records: one effect per (company, operation, key), whatever the retries."""
from __future__ import annotations

import hashlib
from datetime import datetime

from sqlalchemy import Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.database.engine import Base, UtcDateTime, utcnow

DIGEST_BYTES = 16  # of SHA-256: enough that no two keys a company sends share one


def key_digest(operation: str, key: str) -> bytes:
    """What a record is found by within its company: SHA-256 of the operation and the key, a
    line each (an operation holds no line break, so no two pairs read the same)."""
    return hashlib.sha256(f"{operation}\n{key}".encode("utf-8")).digest()[:DIGEST_BYTES]


def _digest_of_row(context) -> bytes:
    row = context.get_current_parameters()
    return key_digest(row["operation"], row["key"])


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_records"

    # The authenticated key's company; no key to companies (TenantMixin.references_company).
    company_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # The digest rather than the operation and the key themselves: every request inserts an
    # entry at a random place in this index, so its width is WAL and, after each checkpoint,
    # pages written whole (docs/performance.md, "The database's share of a checkout").
    key_digest: Mapped[bytes] = mapped_column(LargeBinary(DIGEST_BYTES), primary_key=True,
                                              default=_digest_of_row)
    operation: Mapped[str] = mapped_column(String(100))
    key: Mapped[str] = mapped_column(String(128))
    fingerprint: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The answer, zlib-compressed (app/web/idempotency.py): a checkout's four answers are some
    # 2.7 KB of JSON, 1.2 KB compressed, and every byte is WAL. `response_body` is an answer
    # stored before migration 0026, as text; no record has one a day after it (their TTL).
    answer: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    response_body: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, index=True)
