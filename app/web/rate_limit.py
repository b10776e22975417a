"""The rate limits (429 `rate_limited` with Retry-After, and the RateLimit fields), counted
after authentication, so only key holders are counted (probes, /metrics, card pages and docs
carry no key; a 401 or 403 never gets this far):

- `API_RATE_LIMIT` per register when the request names one with X-Loyalty-Pos-Key, else per
  credential: a chain's registers share their company's key, and one register's runaway loop
  must not throttle the rest of the shop;
- `API_KEY_RATE_LIMIT` per credential over all its requests, whichever registers they name:
  naming many registers, or making new ones, buys a key no more than that.

The counts and their leases are app.web.rate_counts'.
"""
from __future__ import annotations

import math
import time

from flask import Flask, Response, current_app, g

from app.config import Settings
from app.web.errors import error_body
from app.web.rate_counts import Counts, Lease, Rate

# The policies' names in the RateLimit headers.
PER_KEY, PER_REGISTER, KEY_CEILING = "per-key", "per-register", "key-ceiling"


class RateLimits:
    """The rates a key's request is counted against, in the order they are advertised."""

    def __init__(self, settings: Settings):
        counts = Counts(settings.redis_url)
        rate = settings.api_rate_limit
        # One count, named per register or per key by the policy it is advertised under.
        self.per_register = Rate(rate, PER_REGISTER, counts) if rate else None
        self.per_key = Rate(rate, PER_KEY, counts) if rate else None
        ceiling = settings.api_key_rate_limit
        self.ceiling = Rate(ceiling, KEY_CEILING, counts) if ceiling else None

    def count(self, principal) -> list[tuple[Rate, Lease]]:
        counted = []
        if principal.terminal is not None and self.per_register is not None:
            counted.append((self.per_register,
                            f"{principal.credential_id}/{principal.terminal.id}"))
        elif principal.terminal is None and self.per_key is not None:
            counted.append((self.per_key, principal.credential_id))
        if self.ceiling is not None:
            counted.append((self.ceiling, principal.credential_id))
        leases = []
        for rate, name in counted:
            lease = rate.count(name)
            leases.append((rate, lease))
            if lease.refused:  # the next rates are not spent on a refused request
                break
        return leases


def register_rate_limit(app: Flask, settings: Settings) -> None:
    """After the request hooks (app.web.requests), so the key is known when the limit is counted:
    401 and 403 come first, then 413/415, then 429, then the body's 422."""
    if settings.api_rate_limit is None and settings.api_key_rate_limit is None:
        return
    app.extensions["rate_limit"] = RateLimits(settings)
    app.before_request(_count)
    app.after_request(_advertise)


def _count():
    # `g` and the app themselves: each read through a proxy costs (app/web/requests.py).
    state = g._get_current_object()
    principal = state.get("principal")
    if principal is None:
        return None
    rate_limits = current_app._get_current_object().extensions["rate_limit"]
    state.rate_leases = leases = rate_limits.count(principal)
    for rate, lease in leases:
        if lease.refused:
            state.rate_limited = True
            whose = {PER_REGISTER: "this register", PER_KEY: "this API key",
                     KEY_CEILING: "this API key over all its registers"}[rate.policy]
            # Retry-After is set with the other figures (_advertise).
            return error_body(429, "rate_limited",
                              f"too many requests for {whose} (at most {rate.limit})")
    return None


def _advertise(response: Response) -> Response:
    """The RateLimit and RateLimit-Policy fields of draft-ietf-httpapi-ratelimit-headers-10,
    one item per rate the request was counted against."""
    state = g._get_current_object()
    leases = state.get("rate_leases")
    if not leases:
        return response
    policies, figures, waits = [], [], {}
    for rate, lease in leases:
        # Never less than a second, never more than the window.
        reset_in = min(rate.window, max(1, math.ceil(lease.reset_at - time.time())))
        policies.append(f'"{rate.policy}";q={rate.amount};w={rate.window}')
        figures.append(f'"{rate.policy}";r={lease.remaining + lease.left};t={reset_in}')
        if lease.refused:
            waits[rate.policy] = reset_in
    response.headers["RateLimit-Policy"] = ", ".join(policies)
    response.headers["RateLimit"] = ", ".join(figures)
    if waits:  # not another 429, such as an OTP cooldown's with its own wait
        response.headers["Retry-After"] = str(max(waits.values()))
    return response
