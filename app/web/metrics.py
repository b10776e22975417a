"""`GET /metrics` (docs/api.md#availability): Prometheus text for the operator's scraper, outside
/v1 and the interface document, answered only to `Authorization: Bearer <METRICS_TOKEN>`.

Under gunicorn every worker counts its own requests; prometheus_client's multiprocess mode
keeps them in files under PROMETHEUS_MULTIPROC_DIR (app.serving sets it up), which any
worker's scrape adds up. Figures about the outbox, deliveries, the database and the RQ worker
are read at scrape time, by the worker that answers, so they are the same whoever answers.
"""
from __future__ import annotations

import hmac
import os
from functools import lru_cache

from flask import Flask, Response, current_app, request
from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram,
                               disable_created_metrics, generate_latest)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy.orm import Session

from app.web.auth import Unauthorized, bearer_key
from app.database.engine import utcnow
from app.web.monitoring import database_figures, worker_heartbeat
from app.services.errors import NotFound
from app.services.operations import gauges

# Decided, as prometheus_client decides its own storage, when first imported.
MULTIPROCESS = "PROMETHEUS_MULTIPROC_DIR" in os.environ
# The `_created` series say when a label set was first seen: noise here, and multiprocess mode
# has none, so a single process answers as gunicorn's workers do.
disable_created_metrics()
UNMATCHED = "unmatched"
# Any token is a method to werkzeug; a label per made-up method would grow without bound.
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))

REQUESTS = Counter("loyalty_http_requests", "Requests answered, by route template, method and "
                   "status", ["route", "method", "status"], registry=None)
REQUEST_SECONDS = Histogram("loyalty_http_request_duration_seconds",
                            "Time to answer a request, by route template", ["route"],
                            registry=None)


def observe_request(route: str | None, method: str, status: int, seconds: float) -> None:
    """Per request: one counter increment and one histogram observation."""
    counter, histogram = _series(route or UNMATCHED, method if method in METHODS else "other",
                                 status)
    counter.inc()
    histogram.observe(seconds)


@lru_cache(maxsize=4096)  # routes × methods × statuses: bounded, and far fewer in practice
def _series(route: str, method: str, status: int):
    """A request's two series, found once per label set (labels() takes a lock and builds
    its key on every call)."""
    return REQUESTS.labels(route, method, str(status)), REQUEST_SECONDS.labels(route)


class UpkeepCollector:
    """The figures read at scrape time. A database or Redis that cannot be reached shows as
    `..._up 0`; the scrape itself still answers."""

    def __init__(self, app: Flask):
        self.app = app

    def collect(self):
        now = utcnow()
        yield from self._database(now)
        yield from self._worker(now)

    def _database(self, now):
        try:
            with (self.app.extensions["engine"].connect() as connection,
                  Session(bind=connection) as session):
                figures = database_figures(session, now)
                connections = gauges.database_connections(session)
        except Exception:  # whatever the driver raises for a database that is not there
            yield _gauge("loyalty_database_up", "Whether the database answered the scrape", 0)
            return
        yield _gauge("loyalty_database_up", "Whether the database answered the scrape", 1)
        yield _gauge("loyalty_outbox_events_waiting", "Events not yet dispatched to endpoints",
                     figures["outbox"]["waiting"])
        yield _gauge("loyalty_outbox_oldest_waiting_seconds",
                     "Age of the oldest event not yet dispatched (0 when none waits)",
                     figures["outbox"]["oldestWaitingSeconds"] or 0)
        yield _gauge("loyalty_webhook_deliveries", "Webhook deliveries by state",
                     figures["deliveries"], label="state")
        yield _gauge("loyalty_webhook_dead_letters", "Deliveries given up on (DEAD)",
                     figures["deadLetters"])
        if connections:
            yield _gauge("loyalty_database_connections",
                         "Connections to the database by state, every process's pool together",
                         connections, label="state")

    def _worker(self, now):
        heartbeat = worker_heartbeat(self.app.config["SETTINGS"], now)
        if not heartbeat["configured"]:
            return
        yield _gauge("loyalty_redis_up", "Whether Redis answered the scrape",
                     int(heartbeat["reachable"]))
        if not heartbeat["reachable"]:
            return
        yield _gauge("loyalty_rq_workers", "RQ workers registered on the queue",
                     heartbeat["workers"])
        if heartbeat["heartbeatAgeSeconds"] is not None:
            yield _gauge("loyalty_rq_worker_last_heartbeat_timestamp_seconds",
                         "Unix time of the latest heartbeat of any RQ worker on the queue",
                         now.timestamp() - heartbeat["heartbeatAgeSeconds"])


def _gauge(name: str, documentation: str, value, label: str | None = None) -> GaugeMetricFamily:
    if label is None:
        return GaugeMetricFamily(name, documentation, value=value)
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for key, count in sorted(value.items()):
        family.add_metric([key], count)
    return family


def _scrape_registry(app: Flask) -> CollectorRegistry:
    registry = CollectorRegistry()
    if MULTIPROCESS:
        MultiProcessCollector(registry)  # every worker's files, the dead ones' counts included
    else:
        registry.register(REQUESTS)
        registry.register(REQUEST_SECONDS)
    registry.register(UpkeepCollector(app))
    return registry


def metrics():
    token = current_app.config["SETTINGS"].metrics_token
    if not token:
        raise NotFound()
    if not hmac.compare_digest(bearer_key(request).encode(), token.encode()):
        raise Unauthorized("the metrics token is not valid", code="invalid_api_key")
    body = generate_latest(_scrape_registry(current_app._get_current_object()))
    return Response(body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def add_metrics_route(app: Flask) -> None:
    # A plain route, not a blueprint's: it stays out of the interface document.
    app.add_url_rule("/metrics", "metrics", metrics, methods=["GET"])
