"""What an operator checks first, gathered for `flask ops status` and the /metrics scrape.
A service that cannot be reached is reported as such, never raised: the answer matters most
exactly when something is down."""
from __future__ import annotations

from datetime import datetime

from flask import Flask
from redis import Redis
from rq import Queue, Worker
from sqlalchemy.orm import Session

from app.config import Settings
from app.services.operations import gauges
from app.services.webhooks import delivery

# A scrape or a status check must answer even while Redis hangs.
REDIS_TIMEOUT_SECONDS = 2


def failure(exc: BaseException) -> str:
    """The first line of an error, short enough for a JSON field or a log line."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def worker_heartbeat(settings: Settings, now: datetime) -> dict:
    """The RQ workers serving our queue, from RQ's own registry in Redis, and the age of the
    latest heartbeat among them."""
    if not settings.redis_url:
        return {"configured": False, "reachable": None, "workers": None, "lastHeartbeat": None,
                "heartbeatAgeSeconds": None}
    redis = Redis.from_url(settings.redis_url, socket_timeout=REDIS_TIMEOUT_SECONDS,
                           socket_connect_timeout=REDIS_TIMEOUT_SECONDS)
    try:
        workers = Worker.all(connection=redis, queue=Queue(settings.rq_queue, connection=redis))
    except Exception as exc:  # redis-py's errors, and RQ's over a half-written worker hash
        return {"configured": True, "reachable": False, "error": failure(exc), "workers": None,
                "lastHeartbeat": None, "heartbeatAgeSeconds": None}
    finally:
        redis.close()
    beats = [w.last_heartbeat for w in workers if w.last_heartbeat is not None]
    latest = max(beats, default=None)
    return {"configured": True, "reachable": True, "workers": len(workers),
            "lastHeartbeat": latest.isoformat().replace("+00:00", "Z") if latest else None,
            "heartbeatAgeSeconds": round((now - latest).total_seconds(), 1) if latest else None}


def database_figures(session: Session, now: datetime) -> dict:
    waiting, oldest = gauges.outbox_backlog(session, now)
    deliveries = (dict.fromkeys(delivery.STATES, 0)
                  | delivery.delivery_counts(session))
    return {"outbox": {"waiting": waiting, "oldestWaitingSeconds": _round(oldest)},
            "deliveries": deliveries, "deadLetters": deliveries.get(delivery.DEAD, 0)}


def status(app: Flask, now: datetime) -> dict:
    """`flask ops status`: one JSON document."""
    from app.database.migrate import migration_state

    settings = app.config["SETTINGS"]
    report = {"database": {"reachable": False}, "migrations": None, "outbox": None,
              "deliveries": None, "deadLetters": None, "idempotencyRecords": None}
    try:
        with app.extensions["engine"].connect() as connection, Session(bind=connection) as session:
            current, heads = migration_state(connection, settings.database_url)
            report["database"] = {"reachable": True}
            report["migrations"] = {"current": current, "head": heads,
                                    "atHead": set(current) == set(heads)}
            report.update(database_figures(session, now))
            report["idempotencyRecords"] = gauges.idempotency_record_count(session)
    except Exception as exc:  # whatever the driver raises for a database that is not there
        report["database"]["error"] = failure(exc)
    heartbeat = worker_heartbeat(settings, now)
    report["redis"] = {key: heartbeat.pop(key) for key in ("configured", "reachable", "error")
                       if key in heartbeat}
    report["worker"] = heartbeat
    return report


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)
