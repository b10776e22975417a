"""The rate limit (docs/api.md#errors: 429 `rate_limited` with Retry-After), counted by
Flask-Limiter per register when the request names one with X-Loyalty-Pos-Key, else per credential
(docs/api.md#limits: a chain's registers share their company's key, and one register's runaway loop
must not throttle the rest of the shop), in the app's Redis when there is one (every gunicorn worker
and host shares the count) and in the process's memory otherwise.

A round trip to Redis costs about 100 µs of the app's CPU, and Flask-Limiter's per-request
hooks about 130 µs, each some 4 % of a register's request (docs/performance.md). So a busy key
is not counted request by request: a process takes a lease of up to LEASE_MOST requests from
the shared count at once (Flask-Limiter's check with its `cost`) and serves the next ones from
memory until the window ends, without Flask-Limiter's hooks. The shared count is never
exceeded; what a process leased and did not serve is lost at the window's end (under 1 % of the
limit a process).

Never a hard dependency of the register: while Redis cannot be reached, each process counts in
its own memory and asks Redis again after a growing pause (Flask-Limiter's fallback), so a sale
never fails, nor waits long, because the limiter's store is away.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

from flask import Flask, Response, current_app, g
from flask_limiter import Limiter
from flask_limiter.errors import RateLimitExceeded
from limits import parse
from redis.backoff import NoBackoff
from redis.retry import Retry

from app.config import Settings
from app.errors import error_body

log = logging.getLogger("app.rate_limit")
# The policies' names in the RateLimit headers.
PER_KEY, PER_REGISTER = "per-key", "per-register"
LEASE_MOST = 50
KEPT_LEASES = 10_000  # past this many keys, a process forgets the leases whose window ended
# A limiter's store that is slow or away must not hold a register up: a short connect and
# answer, no retries (redis-py's default retries back off for seconds); on failure the
# request is counted in memory instead.
REDIS_OPTIONS = {"socket_connect_timeout": 0.25, "socket_timeout": 0.25,
                 "retry": Retry(NoBackoff(), 0)}


@dataclass
class Lease:
    """Requests a process took from a key's shared count and has not served yet."""
    left: int
    remaining: int  # what the shared count had left once they were taken
    reset_at: float


class PerKeyLimit:
    limiter: Limiter

    def __init__(self, rate: str):
        limit = parse(rate)
        self.amount, self.window = limit.amount, limit.get_expiry()
        # Leases lose at most 1 % of the limit; a small limit is counted one by one.
        self.lease_size = max(1, min(LEASE_MOST, self.amount // 100))
        self.leases: dict[str, Lease] = {}
        self.lock = threading.Lock()

    def serve_from_lease(self, counted: str) -> Lease | None:
        with self.lock:
            lease = self.leases.get(counted)
            if lease is None or lease.left < 1 or time.time() >= lease.reset_at:
                return None
            lease.left -= 1
            return lease

    def take_lease(self, counted: str, remaining: int, reset_at: float) -> Lease:
        lease = Lease(self.lease_size - 1, remaining, reset_at)
        with self.lock:
            if len(self.leases) >= KEPT_LEASES:  # keys seen once a long time ago go
                now = time.time()
                self.leases = {key: kept for key, kept in self.leases.items()
                               if kept.reset_at > now}
            self.leases[counted] = lease
        return lease


def counted_as() -> str:
    """What this request is counted against: its register, else its key."""
    principal = g._get_current_object().principal
    if principal.terminal is not None:
        return f"{principal.credential_id}/{principal.terminal.id}"
    return principal.credential_id


def _count() -> None:
    """Only key holders are counted (probes, /metrics, card pages and docs carry no key; a 401
    or 403 never gets this far): from the process's lease, else by Flask-Limiter's own check,
    which takes a new lease, falls back to memory while the store is away, and raises
    RateLimitExceeded over the limit."""
    # `g` and the app themselves: each read through a proxy costs (app/web/requests.py).
    state = g._get_current_object()
    if state.get("principal") is None:
        return
    per_key = current_app._get_current_object().extensions["rate_limit"]
    state.rate_lease = per_key.serve_from_lease(counted_as())
    if state.rate_lease is None:
        # The check Flask-Limiter's before-request hook makes, made here only when a lease
        # is needed (its hooks are not registered: see register_rate_limit).
        per_key.limiter._check_request_limit()


def register_rate_limit(app: Flask, settings: Settings) -> None:
    """After the request hooks (app.web.requests), so the key is known when the limit is counted:
    401 and 403 come first, then 413/415, then 429, then the body's 422 (docs/api.md#errors)."""
    if settings.api_rate_limit is None:
        return
    per_key = PerKeyLimit(settings.api_rate_limit)
    limiter = per_key.limiter = Limiter(
        counted_as, application_limits=[settings.api_rate_limit],
        application_limits_cost=per_key.lease_size,  # a lease taken at once
        strategy="fixed-window", storage_uri=settings.redis_url or "memory://",
        storage_options=REDIS_OPTIONS if settings.redis_url else {},
        in_memory_fallback_enabled=True, swallow_errors=True, headers_enabled=False,
        key_prefix="loyalty-rate")
    # Registered as already known, init_app configures the limiter (its storage, strategy
    # and fallback) without adding its per-request hooks: _count calls its check instead.
    app.extensions.setdefault("limiter", set()).add(limiter)
    limiter.init_app(app)
    app.before_request(_count)
    app.extensions["rate_limit"] = per_key
    app.register_error_handler(RateLimitExceeded, _too_many_requests)
    app.after_request(_advertise)


def _current_lease(per_key: PerKeyLimit, state) -> Lease | None:
    """This request's lease: the one it was served from, or the one its count just took."""
    if state.get("rate_lease") is not None:
        return state.rate_lease
    limit = per_key.limiter.current_limit
    if limit is None:
        return None
    try:
        remaining, reset_at = limit.remaining, limit.reset_at
    except Exception as error:  # the store went away since the count: no figures to give
        log.warning("rate limit figures unavailable: %s", error)
        return None
    if limit.breached:
        return Lease(0, 0, reset_at)
    return per_key.take_lease(counted_as(), remaining, reset_at)


def _advertise(response: Response) -> Response:
    """The RateLimit and RateLimit-Policy fields of draft-ietf-httpapi-ratelimit-headers-10."""
    state = g._get_current_object()
    principal = state.get("principal")
    if principal is None:
        return response
    per_key = current_app._get_current_object().extensions["rate_limit"]
    lease = _current_lease(per_key, state)
    if lease is None:
        return response
    # Never less than a second, never more than the window.
    reset_in = min(per_key.window, max(1, math.ceil(lease.reset_at - time.time())))
    policy = PER_KEY if principal.terminal is None else PER_REGISTER
    response.headers["RateLimit-Policy"] = f'"{policy}";q={per_key.amount};w={per_key.window}'
    response.headers["RateLimit"] = f'"{policy}";r={lease.remaining + lease.left};t={reset_in}'
    if state.get("rate_limited"):  # not another 429, such as an OTP cooldown's with its own wait
        response.headers["Retry-After"] = str(reset_in)
    return response


def _too_many_requests(error: RateLimitExceeded):
    # Retry-After is set with the other figures (_advertise); 1 s if they cannot be had.
    g.rate_limited = True
    return error_body(429, "rate_limited",
                      f"too many requests for this {'register' if g.principal.terminal else 'API key'}"
                      f" (at most {error.limit.limit})",
                      {"Retry-After": "1"})
