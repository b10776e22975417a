"""`python -m worker`: an RQ worker with its scheduler, plus a timer that enqueues the
periodic upkeep. Several workers may run: a Redis lock lets one enqueue per interval.

It runs until it is stopped (docs/api.md#availability). When Redis goes away the RQ loop ends or
backs off; we start it again with backoff, so neither idle hours nor a Redis restart end the
process. A job that meets a PostgreSQL restart fails, and the outbox sweep enqueues its work
again. Each start of RQ's loop first takes up what a stopped worker or an outage left
waiting. SIGTERM lets the running job finish and exits 0. Only settings that cannot work
(exit 2) end it otherwise, so a supervisor restarts whatever did die. PostgreSQL or Redis not
answering at start is said in one line (which and where), and the worker waits for them.

Jobs run in the worker process itself (RQ's SimpleWorker): a job is a few short transactions
and one HTTP request, and forking a child per job (RQ's default Worker), which then opens its
own database connection, made deliveries about four times slower (bench/webhook_delivery.py).
Scale out with more worker processes."""
from __future__ import annotations

import logging
import signal
import sys
import threading
import time

from redis import ConnectionPool, Redis
from redis.exceptions import RedisError
from rq import Queue, SimpleWorker
from rq.worker import BaseWorker

from app.config import ConfigError
from app.operations.delivery_queue import FAILURE_TTL

log = logging.getLogger("worker")
PERIODIC_JOB = "worker.periodic.run_periodic_tasks"
TAKE_UP_JOB = "worker.jobs.take_up_waiting_work"
UPKEEP_JOB_TIMEOUT = 600
LONGEST_BACKOFF = 30.0
REDIS_RETRY_MOST = 5.0


def periodic_lock_key(queue_name: str) -> str:
    # Per queue: deployments (or test runs) sharing one Redis each get their upkeep.
    return f"loyalty:periodic-lock:{queue_name}"


def worker_redis(url: str) -> Redis:
    """The worker's connection. No socket timeout of ours: RQ sets one longer than its
    blocking dequeue (redis-py's default 5 s ended the worker after 5 idle seconds).
    Keepalive and health checks find a connection that died quietly."""
    return Redis.from_url(url, socket_timeout=None, socket_connect_timeout=5,
                          socket_keepalive=True, health_check_interval=30)


def enqueue_upkeep(queue: Queue, interval: int, stop: threading.Event) -> None:
    """Every `interval` seconds, one upkeep job across all workers. A Redis outage skips
    rounds; it never ends the timer."""
    while not stop.is_set():
        try:
            lock = periodic_lock_key(queue.name)
            if queue.connection.set(lock, "1", nx=True, ex=max(1, interval - 1)):
                queue.enqueue(PERIODIC_JOB, job_timeout=UPKEEP_JOB_TIMEOUT, result_ttl=0)
        except RedisError as error:
            log.warning("upkeep not enqueued, Redis unreachable (%s); trying again in %d s",
                        error, interval)
        except Exception:  # noqa: BLE001 - the timer must outlive any one round
            log.exception("upkeep not enqueued; trying again in %d s", interval)
        stop.wait(interval)


def _stop_on_signals(stop: threading.Event) -> None:
    """Between two runs of RQ's loop, SIGTERM and SIGINT just end the process."""
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.set())


def stopping_on(worker_class: type[BaseWorker], stop: threading.Event) -> type[BaseWorker]:
    """`worker_class`, whose loop takes no job once `stop` is set. RQ installs its signal
    handlers only after it has registered in Redis and started its scheduler; a SIGTERM before
    that reaches ours and sets `stop`, which RQ's loop never reads: it would take a job and
    then wait out a dequeue (minutes) before ending. A SIGTERM after that reaches RQ's
    `request_stop`, which sets `stop` too, so `serve` knows the loop ended on request."""

    class StoppingWorker(worker_class):
        def dequeue_job_and_maintain_ttl(self, timeout, max_idle_time=None):
            if stop.is_set():
                return None  # RQ's loop ends on no job, as at the end of an idle wait
            return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)

        def request_stop(self, signum, frame):
            stop.set()
            super().request_stop(signum, frame)

    StoppingWorker.__name__ = StoppingWorker.__qualname__ = f"Stopping{worker_class.__name__}"
    return StoppingWorker


def serve(queue: Queue, stop: threading.Event,
          worker_class: type[BaseWorker] = SimpleWorker) -> None:
    """RQ's loop, started again whenever it ends without being asked to stop."""
    backoff, probe = 1.0, _probe(queue.connection)
    worker_class = stopping_on(worker_class, stop)
    while not stop.is_set():
        worker, worked = None, False
        try:  # RQ speaks to Redis from the constructor on, before its loop catches anything
            worker = worker_class([queue], connection=queue.connection)
            # RQ's own reconnect backoff grows to 60 s; events wait on it after Redis returns.
            worker.max_connection_wait_time = REDIS_RETRY_MOST
            # First what a stopped worker or an outage left: see take_up_waiting_work.
            queue.enqueue(TAKE_UP_JOB, at_front=True, result_ttl=0, failure_ttl=FAILURE_TTL)
            worked = worker.work(with_scheduler=True)
        except RedisError as error:
            log.warning("Redis unreachable (%s)", error)
        except Exception:  # noqa: BLE001 - logged; the process stays up for the next try
            log.exception("the RQ loop failed")
        if stop.is_set():
            return  # SIGTERM: the running job has finished
        _stop_on_signals(stop)
        backoff = 1.0 if worked else min(backoff * 2, LONGEST_BACKOFF)
        log.warning("the RQ loop ended; starting it again within %.0f s", backoff)
        _wait_for_redis(probe, stop, backoff)


def _wait_for_redis(connection: Redis, stop: threading.Event, most: float) -> None:
    """Wait out the backoff, which keeps an outage's log short, unless Redis is away now and
    comes back first: events are waiting for it, and a step can be 30 s."""
    if _answers(connection):  # the loop ended for another reason: the whole backoff
        stop.wait(most)
        return
    deadline = time.monotonic() + most
    while not stop.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline or _answers(connection):
            return


def _probe(connection: Redis) -> Redis:
    """The worker's connection settings with a read timeout: a Redis that accepts but does
    not answer must not hang the wait."""
    pool = connection.connection_pool
    return Redis(connection_pool=ConnectionPool(connection_class=pool.connection_class,
                                                **dict(pool.connection_kwargs, socket_timeout=5)))


def _answers(connection: Redis) -> bool:
    try:
        return bool(connection.ping())
    except RedisError:
        return False


def _wait_until_reachable(app, stop: threading.Event) -> bool:
    """Until PostgreSQL and Redis both answer, say which does not in one line (again only when
    that changes) and wait. Exiting instead would hand the wait to the supervisor, and
    supervisors give up on a process that keeps failing at start (systemd's start limit,
    supervisord's FATAL after three tries): a worker started before its database would stay
    down. False if stopped meanwhile."""
    from app.operations.reach import first_unreachable

    said, pause = None, 0.5
    while unreachable := first_unreachable(app):
        if unreachable != said:
            print(f"worker: {unreachable}; waiting for it", file=sys.stderr, flush=True)
            said = unreachable
        if stop.wait(pause):
            return False
        pause = min(pause * 2, REDIS_RETRY_MOST)
    if said:
        print("worker: PostgreSQL and Redis answer; starting", file=sys.stderr, flush=True)
    return True


def main(worker_class: type[BaseWorker] = SimpleWorker) -> int:
    from worker.context import worker_app

    try:
        settings = worker_app().config["SETTINGS"]
    except ConfigError as error:
        print(f"worker: {error}", file=sys.stderr)
        return 2
    if not settings.redis_url:
        print("worker: REDIS_URL must be set", file=sys.stderr)
        return 2
    stop = threading.Event()
    _stop_on_signals(stop)
    if not _wait_until_reachable(worker_app(), stop):
        return 0  # stopped while waiting
    queue = Queue(settings.rq_queue, connection=worker_redis(settings.redis_url))
    # The timer has a connection of its own: the worker's blocks in its dequeue.
    timer_queue = Queue(settings.rq_queue,
                        connection=Redis.from_url(settings.redis_url, socket_timeout=5,
                                                  socket_connect_timeout=5))
    timer = threading.Thread(target=enqueue_upkeep, name="upkeep-timer", daemon=True,
                             args=(timer_queue, settings.upkeep_interval_seconds, stop))
    timer.start()
    try:
        serve(queue, stop, worker_class)
    finally:
        stop.set()
    log.info("worker stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
