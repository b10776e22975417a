"""`python -m worker`: an RQ worker with its scheduler, plus a timer that enqueues the
periodic upkeep. Several workers may run: a Redis lock lets one enqueue per interval.

Jobs run in the worker process itself (RQ's SimpleWorker): a job is a few short transactions
and one HTTP request, and forking a child per job (RQ's default Worker), which then opens its
own database connection, made deliveries about four times slower (bench/webhook_delivery.py).
Scale out with more worker processes."""
from __future__ import annotations

import logging
import threading

from redis import Redis
from rq import Queue, SimpleWorker
from rq.worker import BaseWorker

from worker.context import worker_app
from worker.periodic import INTERVAL_SECONDS

log = logging.getLogger("worker")
PERIODIC_JOB = "worker.periodic.run_periodic_tasks"


def periodic_lock_key(queue_name: str) -> str:
    # Per queue: deployments (or test runs) sharing one Redis each get their upkeep.
    return f"loyalty:periodic-lock:{queue_name}"


def _enqueue_periodic(redis: Redis, queue: Queue, stop: threading.Event) -> None:
    while not stop.is_set():
        # One enqueue per interval across all workers.
        if redis.set(periodic_lock_key(queue.name), "1", nx=True, ex=INTERVAL_SECONDS - 1):
            queue.enqueue(PERIODIC_JOB, job_timeout=600)
        stop.wait(INTERVAL_SECONDS)


def main(worker_class: type[BaseWorker] = SimpleWorker) -> None:
    app = worker_app()
    settings = app.config["SETTINGS"]
    if not settings.redis_url:
        raise SystemExit("REDIS_URL must be set for the worker")
    redis = Redis.from_url(settings.redis_url)
    queue = Queue(settings.rq_queue, connection=redis)
    stop = threading.Event()
    timer = threading.Thread(target=_enqueue_periodic, args=(redis, queue, stop), daemon=True)
    timer.start()
    try:
        worker_class([queue], connection=redis).work(with_scheduler=True)
    finally:
        stop.set()


if __name__ == "__main__":
    main()
