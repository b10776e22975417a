"""Webhook targets: the operator's host allow-list, a tenant's endpoints and their signing
secrets (kept encrypted, since signing needs them). Deliveries: app.services.webhooks.delivery."""
from __future__ import annotations

import ipaddress
import json
import re
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.models import AllowedWebhookHost, WebhookEndpoint
from app.services.audit import events as audit
from app.services.errors import InvalidField, NotFound
from app.services.webhooks.sealing import seal, unseal
from app.services.webhooks.signing import new_endpoint_secret
from app.services.webhooks.transport import is_public_address

ALL_EVENTS = "*"
ACTIVE, DISABLED, DELETED = "ACTIVE", "DISABLED", "DELETED"
# How long a rotated-out secret still signs, by default and at most (a day, a week:
# docs/api.md#webhooks).
SECRET_GRACE_SECONDS, MAX_SECRET_GRACE_SECONDS = 86400, 604800
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f]")
# A last label that is a number makes the whole name an IPv4 address (WHATWG URL, inet_aton).
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")


# --- the operator's allow-list -----------------------------------------------------------

def normalise_host(host: str) -> str:
    """The allow-list's spelling of a host name or IP literal; ValueError when it is neither."""
    text = host.strip().lower().rstrip(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    try:
        ascii_host = text.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"not a host name: {host!r}") from exc
    labels = ascii_host.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        # 127.1, 2130706433, 0x7f.0.0.1: resolvers read these as IPv4 addresses.
        raise ValueError(f"{host!r} is an IPv4 address in a shortened or numeric form; "
                         "write it as four decimal numbers (a.b.c.d)")
    if not ascii_host or len(ascii_host) > 253 or not all(map(_HOST_LABEL.match, labels)):
        raise ValueError(f"not a host name: {host!r} "
                         "(give the host alone, without scheme, port or path)")
    return ascii_host


def internal_address(host: str) -> bool:
    """Whether a normalised host is an IP literal no webhook may reach (private, loopback,
    link-local, metadata and the like)."""
    try:
        return not is_public_address(host)
    except ValueError:  # a name: judged when it is resolved, at each delivery
        return False


def allow_host(session: Session, host: str, *, now: datetime) -> str:
    host = normalise_host(host)
    if session.get(AllowedWebhookHost, host) is None:
        session.add(AllowedWebhookHost(host=host, created_at=now))
        session.flush()
    return host


def disallow_host(session: Session, host: str) -> bool:
    removed = session.execute(
        delete(AllowedWebhookHost).where(AllowedWebhookHost.host == normalise_host(host)))
    return removed.rowcount > 0


def allowed_hosts(session: Session) -> list[AllowedWebhookHost]:
    return list(session.scalars(select(AllowedWebhookHost).order_by(AllowedWebhookHost.host)))


def is_allowed(session: Session, host: str) -> bool:
    found = select(AllowedWebhookHost.host).where(AllowedWebhookHost.host == host)
    return session.scalar(found) is not None


def url_host(url: str) -> str:
    """The allow-list host of an https:// url; ValueError when the url may not be a target."""
    if _CONTROL_OR_SPACE.search(url):
        raise ValueError("the url must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises on a malformed port
    except ValueError as exc:
        raise ValueError("not a valid url") from exc
    if parts.scheme.lower() != "https":
        raise ValueError("the url must start with https://")
    if not parts.hostname:
        raise ValueError("the url must name a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("the url must not carry a user name or password")
    return normalise_host(parts.hostname)


# --- endpoint secrets, encrypted at rest -----------------------------------------------------

_SECRET_PURPOSE = "webhook-endpoint-secret"


def encrypt_secret(pepper: str, secret: str) -> str:
    return seal(pepper, _SECRET_PURPOSE, secret)


def decrypt_secret(pepper: str, token: str) -> str:
    return unseal(pepper, _SECRET_PURPOSE, token)


# --- a tenant's endpoints --------------------------------------------------------------------

def create_endpoint(session: Session, company_id: str, *, url: str, events: list[str],
                    description: str | None, pepper: str,
                    now: datetime, actor: audit.Actor | None = None) -> tuple[WebhookEndpoint, str]:
    """A new ACTIVE endpoint and its secret (returned once, stored only encrypted)."""
    try:
        host = url_host(url)
    except ValueError as exc:
        raise InvalidField(["body", "url"], str(exc), "url_not_allowed") from exc
    if not is_allowed(session, host):
        raise InvalidField(["body", "url"], f"the host {host} is not allowed for webhooks; "
                           "ask the operator to allow it", "url_not_allowed")
    secret = new_endpoint_secret()
    endpoint = WebhookEndpoint(company_id=company_id, url=url, events=json.dumps(events),
                               description=description, state=ACTIVE, created_at=now,
                               secret_encrypted=encrypt_secret(pepper, secret))
    session.add(endpoint)
    session.flush()
    audit.record(session, company_id, actor, "webhook_endpoint.created", "webhook_endpoint",
                 endpoint.id, at=now)
    return endpoint, secret


def rotate_secret(session: Session, company_id: str, endpoint_id: str, *, grace_seconds: int,
                  pepper: str, now: datetime, actor: audit.Actor | None = None) -> tuple[WebhookEndpoint, str]:
    """A new secret for the endpoint (returned once, stored only encrypted); the one it replaces
    still signs deliveries for `grace_seconds`. Only that one: a secret two rotations old stops
    at once, so a delivery carries at most two signatures. Concurrent rotations take turns on
    the row, each replacing the secret the one before it showed."""
    endpoint = session.get(WebhookEndpoint, (company_id, endpoint_id), with_for_update=True,
                           populate_existing=True)
    if endpoint is None or endpoint.state == DELETED:
        raise NotFound("webhook endpoint")
    secret = new_endpoint_secret()
    keeps_previous = grace_seconds > 0
    endpoint.previous_secret_encrypted = endpoint.secret_encrypted if keeps_previous else None
    endpoint.previous_secret_valid_until = (now + timedelta(seconds=grace_seconds)
                                            if keeps_previous else None)
    endpoint.secret_encrypted = encrypt_secret(pepper, secret)
    session.flush()
    audit.record(session, company_id, actor, "webhook_endpoint.secret_rotated",
                 "webhook_endpoint", endpoint.id, at=now)
    return endpoint, secret


def signing_secrets(pepper: str, secret_encrypted: str, previous_encrypted: str | None,
                    previous_valid_until: datetime | None, *,
                    now: datetime) -> tuple[str, str | None]:
    """The secrets a delivery made `now` is signed with: the endpoint's, and the one its last
    rotation replaced while that one's grace lasts. InvalidToken when the pepper changed."""
    in_grace = previous_encrypted is not None and previous_valid_until is not None \
        and now < previous_valid_until
    previous = decrypt_secret(pepper, previous_encrypted) if in_grace else None
    return decrypt_secret(pepper, secret_encrypted), previous


def list_endpoints(session: Session, company_id: str) -> list[WebhookEndpoint]:
    return list(session.scalars(
        select(WebhookEndpoint)
        .where(WebhookEndpoint.company_id == company_id, WebhookEndpoint.state != DELETED)
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)))


def delete_endpoint(session: Session, company_id: str, endpoint_id: str, *, now: datetime,
                    actor: audit.Actor | None = None) -> None:
    """Kept as DELETED (its deliveries refer to it); nothing more is sent to it."""
    deleted = session.execute(
        update(WebhookEndpoint)
        .where(WebhookEndpoint.company_id == company_id, WebhookEndpoint.id == endpoint_id,
               WebhookEndpoint.state != DELETED)
        .values(state=DELETED, deleted_at=now)
        .execution_options(synchronize_session=False))
    if deleted.rowcount == 0:
        raise NotFound("webhook endpoint")
    audit.record(session, company_id, actor, "webhook_endpoint.deleted", "webhook_endpoint",
                 endpoint_id, at=now)


def endpoint_events(endpoint: WebhookEndpoint) -> list[str]:
    return json.loads(endpoint.events)


def wants(events_json: str, event_type: str) -> bool:
    """Whether an endpoint with these `events` (its stored JSON) is sent an event of the type."""
    events = json.loads(events_json)
    return ALL_EVENTS in events or event_type in events
