"""The RQ queue that carries webhook work to the worker."""
from __future__ import annotations

from datetime import timedelta
from functools import lru_cache, partial

from redis import Redis
from rq import Queue

from app.config import Settings

DISPATCH_JOB = "worker.jobs.dispatch_events"
DELIVER_JOB = "worker.jobs.deliver"
# An attempt never runs longer than this: its lease (app.services.webhooks) outlasts it.
DELIVER_JOB_TIMEOUT = 45
# A finished job leaves nothing in Redis (the database holds the outcome); a failed one stays
# a week in RQ's failed registry for the operator.
FAILURE_TTL = 7 * 24 * 3600
DELIVER_JOB_OPTIONS = {"timeout": DELIVER_JOB_TIMEOUT, "result_ttl": 0, "failure_ttl": FAILURE_TTL}


@lru_cache(maxsize=4)
def queue(redis_url: str, name: str) -> Queue:
    return Queue(name, connection=Redis.from_url(redis_url))


def event_enqueuer(settings: Settings):
    return partial(enqueue_dispatch, settings)


def enqueue_dispatch(settings: Settings, ids: list[tuple[str, str]]) -> None:
    """Deliveries are made for these (company_id, event_id) by the worker."""
    queue(settings.redis_url, settings.rq_queue).enqueue(DISPATCH_JOB, ids, result_ttl=0,
                                                         failure_ttl=FAILURE_TTL)


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
