"""The per-process cache of companies' campaigns, bounded by the bytes it holds (docs/api.md#tiers:
a web process holds at most 64 MiB of campaigns, whatever any number of companies do).

Each entry says its own size (an upper estimate, `CompanyCampaigns.size`); the cache keeps the
sum of them within its budget by dropping the companies used least recently. Counting
companies instead would not bound anything: one company's campaigns can weigh a few bytes or
several megabytes.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Protocol, TypeVar

MIB = 1024 * 1024
CAMPAIGN_CACHE_BYTES = 64 * MIB


class Sized(Protocol):
    version: int
    size: int


Entry = TypeVar("Entry", bound=Sized)


class BoundedCache(Generic[Entry]):
    """Company id → its latest entry, least recently used first. Thread-safe: a process may
    serve requests from several threads."""

    def __init__(self, budget: int):
        self.budget = budget
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """The bytes the entries say they weigh, together."""
        return self._held

    def companies(self) -> list[str]:
        """Least recently used first: the order they would be dropped in."""
        with self._lock:
            return list(self._entries)

    def get(self, company_id: str, version: int) -> Entry | None:
        """The company's entry if it was read at `version`, else None."""
        with self._lock:
            entry = self._entries.get(company_id)
            if entry is None or entry.version != version:
                return None
            self._entries.move_to_end(company_id)
            return entry

    def latest(self, company_id: str) -> Entry | None:
        """The company's entry whatever version it was read at (what of it has not changed
        need not be read again), without counting as a use."""
        with self._lock:
            return self._entries.get(company_id)

    def put(self, company_id: str, entry: Entry) -> None:
        """Keep `entry` as the company's, dropping the least recently used companies until
        everything fits. An entry larger than the whole budget is not kept (it serves the
        request that read it, and is read again next time)."""
        with self._lock:
            self._drop(company_id)
            if entry.size > self.budget:
                return
            while self._held + entry.size > self.budget:
                self._drop(next(iter(self._entries)))
            self._entries[company_id] = entry
            self._held += entry.size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0

    def _drop(self, company_id: str) -> None:
        entry = self._entries.pop(company_id, None)
        if entry is not None:
            self._held -= entry.size
