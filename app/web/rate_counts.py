"""The counts behind the rate limits (app.web.rate_limit), kept with the `limits` library's
fixed-window strategy and storages: in Redis when there is one (every gunicorn worker and host
shares the count), in the process's memory otherwise.

A round trip to Redis costs about 100 µs of the app's CPU, some 4 % of a register's request
(docs/performance.md). So a busy name is not counted request by request: a process takes a
lease of up to LEASE_MOST requests from the shared count at once and serves the next ones from
memory until the window ends. The shared count is never exceeded; what a process leased and did
not serve is lost at the window's end (under 1 % of the limit a process).

Never a hard dependency of the register: while Redis cannot be reached, each process counts in
its own memory and asks Redis again after a growing pause, so a sale never fails, nor waits
long, because the limiter's store is away.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import MemoryStorage, storage_from_string
from limits.strategies import FixedWindowRateLimiter
from redis.backoff import NoBackoff
from redis.retry import Retry

log = logging.getLogger("app.rate_limit")
LEASE_MOST = 50
KEPT_LEASES = 10_000  # past this many names, a process forgets the leases whose window ended
# A limiter's store that is slow or away must not hold a register up: a short connect and
# answer, no retries (redis-py's default retries back off for seconds); on failure the
# request is counted in memory instead.
REDIS_OPTIONS = {"socket_connect_timeout": 0.25, "socket_timeout": 0.25,
                 "retry": Retry(NoBackoff(), 0)}
KEY_PREFIX = "loyalty-rate"
# How long a process counts in memory before it asks an unreachable Redis again.
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 30.0


@dataclass
class Lease:
    """Requests a process took from a name's count and has not served yet."""
    left: int
    remaining: int  # what the count had left once they were taken
    reset_at: float  # when the count's window ends (seconds since the epoch)
    refused: bool = False  # the count had no room for them: the request is over the rate


class Counts:
    """Fixed-window counts, in Redis while it answers, else in this process's memory."""

    def __init__(self, redis_url: str | None):
        self.memory = FixedWindowRateLimiter(MemoryStorage())
        self.shared = None
        if redis_url:
            storage = storage_from_string(redis_url, key_prefix=KEY_PREFIX,
                                          wrap_exceptions=True, **REDIS_OPTIONS)
            self.shared = FixedWindowRateLimiter(storage)
        self.lock = threading.Lock()
        self.pause = 0.0
        self.shared_again_at = 0.0

    def take(self, limit: RateLimitItem, name: tuple[str, ...], cost: int) -> Lease:
        """`cost` requests taken at once from `name`'s count, or refused if they do not fit."""
        if self.shared is not None and time.monotonic() >= self.shared_again_at:
            try:
                lease = self._take(self.shared, limit, name, cost)
            except StorageError as error:
                self._store_away(error.storage_error)
            else:
                self.pause = 0.0
                return lease
        return self._take(self.memory, limit, name, cost)

    @staticmethod
    def _take(counter: FixedWindowRateLimiter, limit, name, cost) -> Lease:
        fitted = counter.hit(limit, *name, cost=cost)
        stats = counter.get_window_stats(limit, *name)
        if not fitted:
            return Lease(0, 0, stats.reset_time, refused=True)
        return Lease(cost - 1, stats.remaining, stats.reset_time)

    def _store_away(self, error: Exception) -> None:
        with self.lock:
            self.pause = min(LONGEST_PAUSE, max(FIRST_PAUSE, self.pause * 2))
            self.shared_again_at = time.monotonic() + self.pause
        log.warning("rate limit store unreachable (%s): falling back to in-memory counts "
                    "for %.0f s", type(error).__name__, self.pause)


class Rate:
    """One rate (such as "600/minute"), its policy's name, and this process's leases of it."""

    def __init__(self, rate: str, policy: str, counts: Counts):
        self.limit = parse(rate)
        self.amount, self.window = self.limit.amount, self.limit.get_expiry()
        self.policy = policy
        self.counts = counts
        # Leases lose at most 1 % of the limit; a small limit is counted one by one.
        self.lease_size = max(1, min(LEASE_MOST, self.amount // 100))
        self.leases: dict[str, Lease] = {}
        self.lock = threading.Lock()

    def count(self, counted: str) -> Lease:
        """One request of `counted`: served from this process's lease, else from a new one."""
        return self.serve_from_lease(counted) or self.keep(
            counted, self.counts.take(self.limit, (self.policy, counted), self.lease_size))

    def serve_from_lease(self, counted: str) -> Lease | None:
        with self.lock:
            lease = self.leases.get(counted)
            if lease is None or lease.left < 1 or time.time() >= lease.reset_at:
                return None
            lease.left -= 1
            return lease

    def keep(self, counted: str, lease: Lease) -> Lease:
        with self.lock:
            if len(self.leases) >= KEPT_LEASES:  # names seen once a long time ago go
                now = time.time()
                self.leases = {name: kept for name, kept in self.leases.items()
                               if kept.reset_at > now}
            self.leases[counted] = lease
        return lease
