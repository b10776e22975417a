"""Sending one webhook delivery, and the retry timetable.

The host's name is resolved once, each address is checked, and the connection is made to an
address just checked: an internal host never receives so much as a TCP handshake, and a
second DNS lookup (which a rebinding server could answer differently) never happens.
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
from urllib3.exceptions import NewConnectionError

ADDRESS_NOT_ALLOWED = "address not allowed"
_IPV6_ULA = ipaddress.ip_network("fc00::/7")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
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


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address that an IPv4-mapped, 6to4 or NAT64 address reaches. (Teredo,
    2001::/32, is refused whole: it counts as private.)"""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in network for network in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(address: str) -> bool:
    """True when ``address`` (an IP literal) is one a webhook may be delivered to."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if ip.version == 6 and (embedded := _embedded_ipv4(ip)) is not None:
        # A translator or tunnel delivers to the IPv4 address inside: that one is judged.
        ip = embedded
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


def public_addresses(host: str, port: int) -> list[str]:
    """The host's addresses a webhook may be delivered to, in the resolver's order; raises
    socket.gaierror when the name does not resolve."""
    addresses = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        try:
            if is_public_address(sockaddr[0]) and sockaddr[0] not in addresses:
                addresses.append(sockaddr[0])
        except ValueError:
            continue
    return addresses


class _PinnedAdapter(HTTPAdapter):
    """Connects to the address in the URL while TLS is for the webhook's host: the server name
    sent (SNI) and the name the certificate must match (urllib3's `server_hostname` and
    `assert_hostname` pool settings)."""

    def __init__(self, host: str):
        self.host = host
        super().__init__(max_retries=0)

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        super().init_poolmanager(connections, maxsize, block, server_hostname=self.host,
                                 assert_hostname=self.host, **pool_kwargs)


def _not_connected(exc: BaseException) -> bool:
    """Whether the request failed before a connection was made (nothing was sent)."""
    seen: set[int] = set()
    pending: list[object] = [exc]
    while pending:
        current = pending.pop()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, NewConnectionError):
            return True
        pending.extend([current.__cause__, current.__context__, getattr(current, "reason", None)])
        pending.extend(current.args)
    return False


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay-seconds or HTTP-date): a webhook
    receiver's, or APNs' (app.services.cards.apns)."""
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

    if allow_private:
        return _post(url, body, headers, timeout=timeout, ca_bundle=ca_bundle)[0]
    try:
        port = parts.port or 443
        addresses = public_addresses(parts.hostname, port)
    except ValueError:
        return _no_response("invalid url")
    except socket.gaierror as error:
        return _no_response(f"NameResolutionError: {parts.hostname}: {error}"[:_ERROR_TEXT_LIMIT])
    if not addresses:
        return _no_response(ADDRESS_NOT_ALLOWED)
    # The request goes to an address just checked (never to the name, which a second lookup
    # could answer differently); the Host header and TLS are the name's.
    host_header = parts.netloc.rsplit("@", 1)[-1]
    outcome = None
    for address in addresses:
        literal = f"[{address}]" if ":" in address else address
        pinned = parts._replace(netloc=f"{literal}:{port}").geturl()
        outcome, connected = _post(pinned, body, {**headers, "Host": host_header},
                                   timeout=timeout, ca_bundle=ca_bundle,
                                   adapter=_PinnedAdapter(parts.hostname))
        if connected:
            return outcome
    return outcome  # no address took the connection: the last one's failure


def _post(url: str, body: bytes, headers: dict, *, timeout: float, ca_bundle: str | None,
          adapter: HTTPAdapter | None = None) -> tuple[DeliveryOutcome, bool]:
    """The outcome, and False when no connection was made (so nothing was sent)."""
    with requests.Session() as session:
        # No proxies, .netrc or CA bundle from the environment: a proxy would become the
        # connected address and defeat the check.
        session.trust_env = False
        if adapter is not None:
            session.mount("https://", adapter)
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
            return _no_response(f"timed out after {timeout:g} s"), True
        except requests.RequestException as exc:
            # Refused or unreachable: the host's next address may answer.
            connected = isinstance(exc, requests.exceptions.SSLError) or not _not_connected(exc)
            return _no_response(f"{type(exc).__name__}: {exc}"[:_ERROR_TEXT_LIMIT]), connected
        # The receiver's body is never needed; closing without reading it bounds the work.
        response.close()

    retry_after = None
    if response.status_code in (429, 503):
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
    return DeliveryOutcome(status=response.status_code, retry_after=retry_after, error=None), True


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
