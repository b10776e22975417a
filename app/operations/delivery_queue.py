"""The RQ queue that carries webhook deliveries and wallet pushes to the worker."""
from __future__ import annotations

import logging
import time
from datetime import timedelta
from functools import lru_cache

from flask import Flask
from redis import Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry
from rq import Queue

from app.config import Settings

DISPATCH_JOB = "worker.jobs.dispatch_events"
DELIVER_JOB = "worker.jobs.deliver"
PUSH_JOB = "worker.pushes.push"
# An attempt never runs longer than this: its lease (app.services.webhooks.endpoints) outlasts it.
DELIVER_JOB_TIMEOUT = 45
# A finished job leaves nothing in Redis (the database holds the outcome); a failed one stays
# a week in RQ's failed registry for the operator.
FAILURE_TTL = 7 * 24 * 3600
DISPATCH_FLAG_TTL = 60
DELIVER_JOB_OPTIONS = {"timeout": DELIVER_JOB_TIMEOUT, "result_ttl": 0, "failure_ttl": FAILURE_TTL}
# After Redis failed a request, the next ones do not ask it for this long: the outbox keeps
# their events for the sweep, and the web worker does not pay a failed connect per request.
REDIS_AWAY_SECONDS = 5.0

log = logging.getLogger("app.operations.delivery_queue")


@lru_cache(maxsize=4)
def queue(redis_url: str, name: str) -> Queue:
    """A Redis that is away is known within a second (the connect; the web asks after a
    register's response, in the worker that serves the next one); a busy one gets the usual
    5 s to answer, so a loaded machine does not drop a dispatch's enqueue to the sweep. One
    immediate retry reconnects a pooled connection that a Redis restart closed."""
    connection = Redis.from_url(redis_url, socket_connect_timeout=1, socket_timeout=5,
                                retry=Retry(NoBackoff(), 1), health_check_interval=30)
    return Queue(name, connection=connection)


def hand_over_events(app: Flask, events: list) -> None:
    """The one after-commit hook: committed events (a request's, after its response is sent;
    a job's or a command's, when its transaction ends) ask for a dispatch run. Never fails
    what has committed: if Redis is away, the worker's sweep finds the events."""
    enqueuer = app.extensions.get("enqueue_events")
    if not events or enqueuer is None:
        return
    try:
        enqueuer()
    except Exception:
        log.warning("could not enqueue events; the outbox sweep will deliver them", exc_info=True)


class EventEnqueuer:
    """Asks for a dispatch run; a run takes every event waiting, so no ids travel."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.away_until = 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if now < self.away_until:
            return
        try:
            request_dispatch(self.settings)
        except RedisError as error:
            self.away_until = now + REDIS_AWAY_SECONDS
            log.warning("Redis unreachable (%s): events wait in the outbox for the sweep; "
                        "not asking again for %.0f s", error, REDIS_AWAY_SECONDS)


def dispatch_flag_key(settings: Settings) -> str:
    return f"loyalty:dispatch-requested:{settings.rq_queue}"


def request_dispatch(settings: Settings, *, force: bool = False) -> None:
    """Have a dispatch run start soon. While one is queued and not yet started, a request costs
    one Redis command and no job: a burst of commits is dispatched by one run. The flag expires,
    so a run lost before it started holds nothing back for long (the sweep forces one too)."""
    target = queue(settings.redis_url, settings.rq_queue)
    first = target.connection.set(dispatch_flag_key(settings), "1", nx=True, ex=DISPATCH_FLAG_TTL)
    if first or force:
        target.enqueue(DISPATCH_JOB, result_ttl=0, failure_ttl=FAILURE_TTL)


def dispatch_started(settings: Settings) -> None:
    """A run has started: events committed from now on ask for the next one."""
    queue(settings.redis_url, settings.rq_queue).connection.delete(dispatch_flag_key(settings))


def enqueue_deliveries(settings: Settings, ids: list[tuple[str, str]]) -> None:
    """One delivery job per (company_id, delivery_id), in one round trip."""
    if not ids or not settings.redis_url:
        return
    target = queue(settings.redis_url, settings.rq_queue)
    target.enqueue_many([Queue.prepare_data(DELIVER_JOB, args=(company_id, delivery_id),
                                            **DELIVER_JOB_OPTIONS)
                         for company_id, delivery_id in ids])


def enqueue_delivery_in(settings: Settings, company_id: str, delivery_id: str,
                        seconds: float) -> None:
    """The next attempt, handed to the worker's scheduler."""
    queue(settings.redis_url, settings.rq_queue).enqueue_in(
        timedelta(seconds=seconds), DELIVER_JOB, company_id, delivery_id,
        job_timeout=DELIVER_JOB_TIMEOUT, result_ttl=0, failure_ttl=FAILURE_TTL)


def enqueue_pushes(settings: Settings, keys: list[tuple[str, str, str]]) -> None:
    """One push job per wallet registration (company_id, customer_id, device), in one round trip."""
    if not keys or not settings.redis_url:
        return
    target = queue(settings.redis_url, settings.rq_queue)
    target.enqueue_many([Queue.prepare_data(PUSH_JOB, args=tuple(key), **DELIVER_JOB_OPTIONS)
                         for key in keys])


def enqueue_push_in(settings: Settings, key: tuple[str, str, str], seconds: float) -> None:
    queue(settings.redis_url, settings.rq_queue).enqueue_in(
        timedelta(seconds=seconds), PUSH_JOB, *key, job_timeout=DELIVER_JOB_TIMEOUT,
        result_ttl=0, failure_ttl=FAILURE_TTL)
