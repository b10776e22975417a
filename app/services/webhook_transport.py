"""Sending one webhook delivery, and the retry timetable.

The address check happens on the socket after it has connected, before TLS starts:
checking the name's DNS answer first and connecting later would let a receiver's DNS
answer with a public address to the check and a private one to the connection.
"""

import ipaddress
import math
import random
import re
import socket
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

ADDRESS_NOT_ALLOWED = "address not allowed"
_IPV6_ULA = ipaddress.ip_network("fc00::/7")
_ERROR_TEXT_LIMIT = 500
# [0-9] rather than isdigit(): that also accepts non-ASCII digits.
_DELAY_SECONDS = re.compile(r"[0-9]+")


@dataclass
class DeliveryOutcome:
    """What one attempt came to: the receiver's status, or ``error`` when none arrived."""

    status: int | None
    retry_after: float | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def gone(self) -> bool:
        return self.status == 410


def is_public_address(address: str) -> bool:
    """True when ``address`` (an IP literal) is one a webhook may be delivered to."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
        or (ip.version == 6 and ip in _IPV6_ULA)
    ):
        return False
    # Also excludes shared (carrier-grade NAT) space such as 100.64.0.0/10.
    return ip.is_global


class _AddressNotAllowed(NewConnectionError):
    pass


class _PublicOnlyHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        try:
            peer = sock.getpeername()[0]
            allowed = is_public_address(peer)
        except (OSError, ValueError):
            allowed = False
        if not allowed:
            sock.close()
            raise _AddressNotAllowed(self, ADDRESS_NOT_ALLOWED)
        return sock


class _PublicOnlyHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _PublicOnlyHTTPSConnection


class _PublicOnlyAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": HTTPConnectionPool,
            "https": _PublicOnlyHTTPSConnectionPool,
        }


def _address_refused(exc: BaseException) -> bool:
    """Whether the guard's refusal lies somewhere inside what requests raised."""
    seen: set[int] = set()
    pending: list[object] = [exc]
    while pending:
        current = pending.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, _AddressNotAllowed):
            return True
        pending.extend([current.__cause__, current.__context__, getattr(current, "reason", None)])
        pending.extend(current.args)
    return False


def _parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - time.time())


def _no_response(error: str) -> DeliveryOutcome:
    return DeliveryOutcome(status=None, retry_after=None, error=error)


def post_event(
    url: str,
    body: bytes,
    headers: dict,
    *,
    timeout: float = 15.0,
    allow_private: bool = False,
    ca_bundle: str | None = None,
) -> DeliveryOutcome:
    """POST ``body`` to ``url`` once; never raises for network trouble, never follows redirects."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _no_response("invalid url")
    if parts.scheme.lower() != "https" or not parts.hostname:
        return _no_response("only https:// urls are allowed")

    with requests.Session() as session:
        # No proxies, .netrc or CA bundle from the environment: a proxy would become the
        # connected address and defeat the check.
        session.trust_env = False
        if not allow_private:
            session.mount("https://", _PublicOnlyAdapter())
        try:
            response = session.post(
                url,
                data=body,
                headers={**headers, "Content-Type": "application/json"},
                timeout=timeout,
                allow_redirects=False,
                verify=ca_bundle if ca_bundle is not None else True,
                stream=True,
            )
        except requests.Timeout:
            return _no_response(f"timed out after {timeout:g} s")
        except requests.RequestException as exc:
            if _address_refused(exc):
                return _no_response(ADDRESS_NOT_ALLOWED)
            return _no_response(f"{type(exc).__name__}: {exc}"[:_ERROR_TEXT_LIMIT])
        # The receiver's body is never needed; closing without reading it bounds the work.
        response.close()

    retry_after = None
    if response.status_code in (429, 503):
        retry_after = _parse_retry_after(response.headers.get("Retry-After"))
    return DeliveryOutcome(status=response.status_code, retry_after=retry_after, error=None)


def retry_delays(schedule: str) -> list[float]:
    """Parse ``WEBHOOK_RETRY_SCHEDULE``: comma-separated seconds, N numbers for N + 1 attempts."""
    delays: list[float] = []
    for item in schedule.split(","):
        try:
            delay = float(item.strip())
        except ValueError:
            raise ValueError(
                f"webhook retry schedule must be comma-separated seconds, got {schedule!r}"
            ) from None
        if not math.isfinite(delay) or delay < 0:
            raise ValueError(f"webhook retry delays must be finite and not negative, got {item!r}")
        delays.append(delay)
    return delays


def next_delay(
    attempt_index: int,
    delays: list[float],
    retry_after: float | None,
    rand: random.Random | None = None,
) -> float | None:
    """Seconds before the next attempt after attempt ``attempt_index`` (0-based) failed.

    The scheduled delay gets ±10 % jitter; a larger ``Retry-After`` from the receiver
    wins. None when the schedule is used up and the event goes to the dead letters.
    """
    if attempt_index < 0:
        raise ValueError("attempt_index must not be negative")
    if attempt_index >= len(delays):
        return None
    source = rand if rand is not None else random
    delay = delays[attempt_index] * source.uniform(0.9, 1.1)
    if retry_after is not None and retry_after > delay:
        return retry_after
    return delay
