"""Pushes to Apple's push service (APNs) that tell a device its pass changed (docs/api.md#wallet).

HTTP/2 is what APNs speaks; httpx with h2 does it (a connection kept per worker process, its
streams reused push after push), authenticated by the pass type certificate as the TLS client
certificate. The body is `{}`: a device asks our web service what changed.
"""
from __future__ import annotations

import logging
import os
import ssl
from dataclasses import dataclass
from functools import lru_cache

import httpx

from app.services.webhooks.transport import parse_retry_after

log = logging.getLogger("app.apns")
PUSH_TIMEOUT = 15.0
# The reasons of a 400 that say the device token itself will never be accepted for this pass
# type: like a 410, the registration goes (Apple's "Handling notification responses from APNs").
DEAD_TOKEN_REASONS = frozenset({"BadDeviceToken", "DeviceTokenNotForTopic"})


@dataclass(frozen=True)
class PushOutcome:
    status: int | None  # None when no answer came (connection refused, timeout, TLS)
    retry_after: float | None = None
    error: str | None = None
    reason: str | None = None  # APNs' own, from the body of a refusal

    @property
    def sent(self) -> bool:
        return self.status == 200

    @property
    def gone(self) -> bool:
        """The device token is no longer active for the topic, or never was one APNs takes for
        it: its registration goes."""
        return self.status == 410 or (self.status == 400 and self.reason in DEAD_TOKEN_REASONS)

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status == 429 or self.status >= 500


def _files_version(*paths: str | None) -> tuple:
    return tuple((path, os.stat(path).st_mtime_ns if path else None) for path in paths)


def client(apns_url: str, ca_bundle: str | None, cert_file: str, key_file: str) -> httpx.Client:
    """The process's HTTP/2 client; a renewed certificate (a file changed) makes a new one."""
    return _client(apns_url, _files_version(ca_bundle, cert_file, key_file))


@lru_cache(maxsize=2)
def _client(apns_url: str, files: tuple) -> httpx.Client:
    (ca_bundle, _), (cert_file, _), (key_file, _) = files
    context = ssl.create_default_context(cafile=ca_bundle)
    context.load_cert_chain(cert_file, key_file)
    return httpx.Client(base_url=apns_url, http2=True, verify=context, timeout=PUSH_TIMEOUT,
                        follow_redirects=False)


def push(http: httpx.Client, push_token: str, topic: str) -> PushOutcome:
    """One push: POST /3/device/{token} with `apns-topic` and the body `{}`."""
    try:
        response = http.post(f"/3/device/{push_token}", content=b"{}",
                             headers={"apns-topic": topic, "content-type": "application/json"})
    except httpx.HTTPError as error:
        return PushOutcome(None, error=f"{type(error).__name__}: {error}"[:500])
    if response.http_version != "HTTP/2":
        return PushOutcome(None, error=f"the push service answered in {response.http_version}")
    if response.status_code == 200:
        return PushOutcome(200)
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    error = f"HTTP {response.status_code} {response.text[:200]}"
    return PushOutcome(response.status_code, retry_after, error, _reason(response))


def _reason(response: httpx.Response) -> str | None:
    """APNs' `reason` from a refusal's JSON body (`{"reason": "BadDeviceToken"}`), if any."""
    try:
        body = response.json()
    except ValueError:  # no body, or not JSON (UnicodeDecodeError is a ValueError too)
        return None
    reason = body.get("reason") if isinstance(body, dict) else None
    return reason if isinstance(reason, str) else None
