"""Column helpers shared by the models.

Every tenant table starts with `company_id` and keeps it in every primary, unique and
foreign key (docs/api.md#operators), so the schema can be distributed by company.
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import ClassVar

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

from app.database.engine import UtcDateTime, utcnow

Money = BigInteger  # integer kopecks


# A random (version 4) UUID's bits: the version nibble 4 and the RFC 4122 variant, set on 128
# random bits; as uuid.uuid4() makes them.
_KEEP = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_SET = (0x4000 << 64) | (0x8000 << 48)


def new_id() -> str:
    """A random (version 4) UUID as text: str(uuid.uuid4()) without the UUID object, which
    costs more than the id itself (a checkout makes seventeen)."""
    value = f"{int.from_bytes(os.urandom(16)) & _KEEP | _SET:032x}"
    return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"


class TenantMixin:
    """`(company_id, id)` primary key and a creation time."""

    # Rows written on every register request name their company through a parent (customer,
    # session, sale) or the authenticated key, without a key of their own to companies: each
    # such check locks the one company row that all the company's registers share
    # (docs/decisions.md, "The register's path").
    references_company: ClassVar[bool] = True

    @declared_attr
    def company_id(cls) -> Mapped[str]:
        # First in the primary key: the key's prefix is the company (index scans, distribution).
        keys = (ForeignKey("companies.id"),) if cls.references_company else ()
        return mapped_column(String(36), *keys, primary_key=True, sort_order=-2)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id, sort_order=-1)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
