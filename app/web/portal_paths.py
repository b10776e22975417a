"""Which requests are the back office's: those under its path. The edge needs it (the
language chosen, the cookie session opened) as much as the portal's own pages do."""
from __future__ import annotations

PREFIX = "/portal"


def in_portal(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")
