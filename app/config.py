"""Every setting the service reads, in one place, each with its default.

Settings come only from the environment (docs/api.md#operators). `Settings.from_env()` fails fast
on a combination that would be unsafe in production.
"""
from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from app.wire import parse_amount

# gunicorn's threads a web process: app/serving.py serves with it, the reports' fair share
# keeps one of them free (one default, read by both).
DEFAULT_WEB_THREADS = 2

INSTANCE_DIR = Path(__file__).resolve().parent.parent / "instance"
DEFAULT_DATABASE_URL = f"sqlite:///{INSTANCE_DIR / 'loyalty.db'}"
# Only for the embedded SQLite default: a pepper in the open is no secret.
DEVELOPMENT_PEPPER = "development-pepper-not-for-production"
DEFAULT_RETRY_SCHEDULE = "5,300,1800,7200,18000,36000,36000"
DEFAULT_APNS_URL = "https://api.push.apple.com"
# Seconds between push attempts to a device while APNs answers 429/5xx or not at all.
DEFAULT_APNS_RETRY_SCHEDULE = "5,30,120,600,1800,3600"
# Counted per register when a request names one, else per key (docs/api.md#limits). A chain of 1,000
# stores sends about 300 requests a second at its peak, all on one key when its registers do
# not name themselves: 1,000 a second lets that through with room, and still stops one runaway
# client before it takes the service from everyone else.
DEFAULT_RATE_LIMIT = "60000/minute"
# A key over all its registers: a 1,000-store chain's peak (about 300 requests/s) twice over.
DEFAULT_KEY_RATE_LIMIT = "36000/minute"
# gunicorn's default for FORWARDED_ALLOW_IPS: only a proxy on the same host is believed.
DEFAULT_TRUSTED_PROXIES = "127.0.0.1,::1"
# Where `make run` serves; card links sent to shoppers are built on it, never on the Host header.
DEVELOPMENT_BASE_URL = "http://127.0.0.1:8000"
# The most one adjustment by a support-desk member moves either way, in kopecks (500.00).
DEFAULT_SUPPORT_ADJUSTMENT_LIMIT = 50_000


def normalise_database_url(url: str) -> str:
    """psycopg2 is our driver; SQLAlchemy 2.1 would pick psycopg 3 for a bare postgresql://
    (measured dearer a checkout: docs/performance.md)."""
    for plain in ("postgres://", "postgresql://"):
        if url.startswith(plain):
            return "postgresql+psycopg2://" + url[len(plain):]
    return url


class ConfigError(RuntimeError):
    """A setting is missing or malformed; the process refuses to start."""


def _base_url(value: str) -> str:
    """PUBLIC_BASE_URL: scheme and host (and perhaps a path prefix), nothing after them."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"PUBLIC_BASE_URL must be like https://cards.example.com, got {value!r}")
    return value.rstrip("/")


def _flag(value: str | None, default: bool = False) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _int(env: dict, name: str, default: int) -> int:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from exc


def _rate(value: str | None, name: str = "API_RATE_LIMIT",
          default: str = DEFAULT_RATE_LIMIT) -> str | None:
    """A rate setting: one rate like "6000/minute" or "100/second"; "off" counts nothing."""
    value = (value or default).strip()
    if value.lower() == "off":
        return None
    from limits import parse
    try:
        parse(value)
    except ValueError as exc:
        raise ConfigError(
            f'{name} must be like "6000/minute" or "off", got {value!r}') from exc
    return value


def _trusted_proxies(value: str | None) -> str:
    """FORWARDED_ALLOW_IPS, gunicorn's setting: addresses or networks, or "*"."""
    value = (value or DEFAULT_TRUSTED_PROXIES).strip()
    try:
        trusted_networks(value)
    except ValueError as exc:
        raise ConfigError(f"FORWARDED_ALLOW_IPS must list addresses or networks, got {value!r}") from exc
    return value


@lru_cache(maxsize=16)
def trusted_networks(setting: str) -> tuple | None:
    """The networks FORWARDED_ALLOW_IPS names; None for "*" (every peer is trusted)."""
    entries = [entry.strip() for entry in setting.split(",") if entry.strip()]
    if "*" in entries:
        return None
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _kopecks(env: dict, name: str, default: int) -> int:
    """An amount setting such as "500.00", in kopecks, not negative."""
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = parse_amount(raw.strip())
    except ValueError as exc:
        raise ConfigError(f'{name} must be an amount such as "500.00", got {raw!r}') from exc
    if value < 0:
        raise ConfigError(f"{name} must not be negative, got {raw!r}")
    return value


def _positive(env: dict, name: str, default: int) -> int:
    value = _int(env, name, default)
    if value < 1:
        raise ConfigError(f"{name} must be at least 1, got {value}")
    return value


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    api_key_pepper: str = DEVELOPMENT_PEPPER
    webhook_retry_schedule: str = DEFAULT_RETRY_SCHEDULE
    webhook_allow_private_addresses: bool = False
    webhook_ca_bundle: str | None = None
    idempotency_ttl: int = 24 * 3600
    outbox_retention_days: int = 30
    metrics_token: str | None = None
    max_content_length: int = 16 * 1024 * 1024
    public_base_url: str = DEVELOPMENT_BASE_URL
    session_ttl: int = 24 * 3600
    api_rate_limit: str | None = DEFAULT_RATE_LIMIT
    api_key_rate_limit: str | None = DEFAULT_KEY_RATE_LIMIT
    rq_queue: str = "loyalty"
    upkeep_interval_seconds: int = 30
    log_level: str = "INFO"
    forwarded_allow_ips: str = DEFAULT_TRUSTED_PROXIES
    development: bool = True
    wallet: dict = field(default_factory=dict)
    apns_url: str = DEFAULT_APNS_URL
    apns_ca_bundle: str | None = None
    apns_retry_schedule: str = DEFAULT_APNS_RETRY_SCHEDULE
    reports_at_once: int = 4
    report_timeout_seconds: int = 120
    web_threads: int = DEFAULT_WEB_THREADS
    support_adjustment_limit: int = DEFAULT_SUPPORT_ADJUSTMENT_LIMIT

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @classmethod
    def from_env(cls, env: dict | None = None) -> "Settings":
        env = dict(os.environ if env is None else env)
        database_url = normalise_database_url(env.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
        embedded = database_url.startswith("sqlite")
        pepper = env.get("API_KEY_PEPPER") or ""
        if not pepper:
            if not embedded:
                raise ConfigError("API_KEY_PEPPER must be set when DATABASE_URL is not SQLite")
            pepper = DEVELOPMENT_PEPPER
        base_url = env.get("PUBLIC_BASE_URL") or ""
        if not base_url and not embedded:
            # Links to 127.0.0.1 would reach shoppers' phones from production.
            raise ConfigError("PUBLIC_BASE_URL must be set when DATABASE_URL is not SQLite")
        return cls(
            database_url=database_url,
            redis_url=env.get("REDIS_URL") or None,
            api_key_pepper=pepper,
            webhook_retry_schedule=env.get("WEBHOOK_RETRY_SCHEDULE") or DEFAULT_RETRY_SCHEDULE,
            webhook_allow_private_addresses=_flag(env.get("WEBHOOK_ALLOW_PRIVATE_ADDRESSES")),
            webhook_ca_bundle=env.get("WEBHOOK_CA_BUNDLE") or None,
            idempotency_ttl=_int(env, "IDEMPOTENCY_TTL", 24 * 3600),
            # At least a day: 0 would delete events the moment they are delivered.
            outbox_retention_days=_positive(env, "OUTBOX_RETENTION_DAYS", 30),
            metrics_token=env.get("METRICS_TOKEN") or None,
            max_content_length=_int(env, "MAX_CONTENT_LENGTH", 16 * 1024 * 1024),
            public_base_url=_base_url(base_url or DEVELOPMENT_BASE_URL),
            session_ttl=_int(env, "SESSION_TTL", 24 * 3600),
            api_rate_limit=_rate(env.get("API_RATE_LIMIT")),
            api_key_rate_limit=_rate(env.get("API_KEY_RATE_LIMIT"), "API_KEY_RATE_LIMIT",
                                     DEFAULT_KEY_RATE_LIMIT),
            rq_queue=env.get("RQ_QUEUE") or "loyalty",
            upkeep_interval_seconds=_positive(env, "UPKEEP_INTERVAL_SECONDS", 30),
            log_level=env.get("LOG_LEVEL") or "INFO",
            forwarded_allow_ips=_trusted_proxies(env.get("FORWARDED_ALLOW_IPS")),
            development=embedded,
            wallet={
                "cert_file": env.get("WALLET_CERT_FILE") or None,
                "key_file": env.get("WALLET_KEY_FILE") or None,
                "wwdr_file": env.get("WALLET_WWDR_FILE") or None,
                "pass_type_id": env.get("WALLET_PASS_TYPE_ID") or None,
                "team_id": env.get("WALLET_TEAM_ID") or None,
            },
            apns_url=(env.get("APNS_URL") or DEFAULT_APNS_URL).rstrip("/"),
            apns_ca_bundle=env.get("APNS_CA_BUNDLE") or None,
            apns_retry_schedule=env.get("APNS_RETRY_SCHEDULE") or DEFAULT_APNS_RETRY_SCHEDULE,
            reports_at_once=_positive(env, "REPORTS_AT_ONCE", 4),
            report_timeout_seconds=_positive(env, "REPORT_TIMEOUT_SECONDS", 120),
            # gunicorn's threads a web process (app/serving.py reads the same variable).
            web_threads=_positive(env, "WEB_THREADS", DEFAULT_WEB_THREADS),
            support_adjustment_limit=_kopecks(env, "SUPPORT_ADJUSTMENT_LIMIT",
                                              DEFAULT_SUPPORT_ADJUSTMENT_LIMIT),
        )
