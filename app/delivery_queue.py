"""The RQ queue that carries webhook work to the worker."""
from __future__ import annotations

from functools import lru_cache

from redis import Redis
from rq import Queue

from app.config import Settings

DISPATCH_JOB = "worker.jobs.dispatch_events"


@lru_cache(maxsize=4)
def queue(redis_url: str, name: str) -> Queue:
    return Queue(name, connection=Redis.from_url(redis_url))


def event_enqueuer(settings: Settings):
    def enqueue(ids: list[tuple[str, str]]) -> None:
        queue(settings.redis_url, settings.rq_queue).enqueue(DISPATCH_JOB, ids)

    return enqueue
