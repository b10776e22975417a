"""Who the client is when the service runs behind a proxy (docs/api.md#limits).

gunicorn believes `X-Forwarded-Proto` only from the addresses in `FORWARDED_ALLOW_IPS` (its
own setting, whose default and meaning we share) and sets the request's scheme from it. It
leaves the client's address as the connection's peer, so the address the logs show is worked
out here, by the same rule: `X-Forwarded-For` counts only when the peer is a trusted proxy, and
then the client is the nearest address in it that is not one of ours (a client may put
anything at the start of the header; only what our proxies appended is believed)."""
from __future__ import annotations

import ipaddress
from functools import lru_cache

from app.config import trusted_networks


@lru_cache(maxsize=1024)
def _is_trusted(address: str, networks: tuple | None) -> bool:
    # Cached: behind nginx every request asks this of the same proxy and, from a register, of
    # the same client address; parsing them was half of the 16 µs the address took a request.
    if networks is None:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # a UNIX socket's peer has no address: gunicorn trusts it too
        return not address
    return any(ip in network for network in networks)


def client_address(peer: str | None, forwarded_for: str | None, setting: str) -> str | None:
    """The client's address: the peer's, unless the peer is a trusted proxy that says whom it
    forwards for."""
    networks = trusted_networks(setting)
    if not forwarded_for or not _is_trusted(peer or "", networks):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, networks):
            return hop
    return hops[0] if hops else peer
