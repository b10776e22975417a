"""How many reports run at once: at most two of one company, at most `reports_at_once` over
the whole service, and never every thread of a web process, so a company's long reports hold up
neither another company's requests nor the registers.

The company's and the service's counts are kept in Redis when REDIS_URL is set (every web
process and host shares them), else in the process's memory; the process's own count is always
in memory. A report takes its slots before it reads anything and gives them back on every way
out (an answer, an error). A slot in Redis also expires on its own after `SLOT_SECONDS`, so the
slots of a process killed in the middle of a report come back without it. While Redis cannot be
reached, the counts fall back to the process's memory: a report is never refused for that.
"""
from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from redis import Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from app.services.errors import RateLimited

log = logging.getLogger("app.reports")

PER_COMPANY = 2
# A slot left by a process that died is free again after this long; far beyond what a report
# may take (each of its statements is cut at REPORT_TIMEOUT_SECONDS).
SLOT_SECONDS = 900
# What a refused report is told to wait: a 31-day report takes about a second at a large company.
RETRY_AFTER_SECONDS = 5
# A slow or absent Redis must not hold a report up long: a short connect and answer, no retries.
REDIS_OPTIONS = {"socket_connect_timeout": 0.25, "socket_timeout": 0.25,
                 "retry": Retry(NoBackoff(), 0)}

# Atomically: forget the slots that expired, refuse when the company or the service has its
# most, else take a slot in both. Redis's own clock, so hosts' clocks need not agree.
_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 2 end
local expires = now + tonumber(ARGV[4])
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, expires, ARGV[1])
  redis.call('EXPIRE', key, ARGV[4])
end
return 0
"""
TAKEN, COMPANY_FULL, SERVICE_FULL = 0, 1, 2


class ReportSlots:
    def __init__(self, *, at_once: int, per_process: int, redis_url: str | None,
                 namespace: str):
        self.at_once, self.per_process = at_once, per_process
        self.namespace = namespace
        self.lock = threading.Lock()
        self.in_process = 0
        self.in_memory: Counter = Counter()  # company id (and "" for the service) → running
        self.redis = Redis.from_url(redis_url, **REDIS_OPTIONS) if redis_url else None
        self.take_script = self.redis.register_script(_TAKE) if self.redis else None

    @contextmanager
    def slot(self, company_id: str) -> Iterator[None]:
        """Run the body in one of the company's slots, or raise RateLimited (429)."""
        self._take_in_process()
        try:
            with self._shared(company_id):
                yield
        finally:
            with self.lock:
                self.in_process -= 1

    def _take_in_process(self) -> None:
        with self.lock:
            if self.in_process >= self.per_process:
                raise _busy("this server is running as many reports as it may")
            self.in_process += 1

    @contextmanager
    def _shared(self, company_id: str) -> Iterator[None]:
        token = self._take_in_redis(company_id) if self.redis is not None else None
        if token is None:
            self._take_in_memory(company_id)
        try:
            yield
        finally:
            if token is None:
                self._give_back_in_memory(company_id)
            else:
                self._give_back_in_redis(company_id, token)

    def _keys(self, company_id: str) -> list[str]:
        base = f"{self.namespace}:reports-running"
        return [f"{base}:{company_id}", base]

    def _take_in_redis(self, company_id: str) -> str | None:
        """The slot's token; None when Redis cannot be asked (then memory counts)."""
        token = uuid.uuid4().hex
        try:
            outcome = self.take_script(keys=self._keys(company_id),
                                       args=[token, PER_COMPANY, self.at_once, SLOT_SECONDS])
        except RedisError as error:
            log.warning("report slots counted in memory: Redis did not answer (%s)",
                        type(error).__name__)
            return None
        _refuse(outcome)
        return token

    def _give_back_in_redis(self, company_id: str, token: str) -> None:
        try:
            with self.redis.pipeline() as pipe:
                for key in self._keys(company_id):
                    pipe.zrem(key, token)
                pipe.execute()
        except RedisError as error:  # the slot expires on its own
            log.warning("a report slot was not given back: Redis did not answer (%s)",
                        type(error).__name__)

    def _take_in_memory(self, company_id: str) -> None:
        with self.lock:
            if self.in_memory[company_id] >= PER_COMPANY:
                _refuse(COMPANY_FULL)
            if self.in_memory[""] >= self.at_once:
                _refuse(SERVICE_FULL)
            self.in_memory[company_id] += 1
            self.in_memory[""] += 1

    def _give_back_in_memory(self, company_id: str) -> None:
        with self.lock:
            for counted in (company_id, ""):
                self.in_memory[counted] -= 1
                if not self.in_memory[counted]:
                    del self.in_memory[counted]


class ReportTimedOut(RateLimited):
    """A statement of the report ran past REPORT_TIMEOUT_SECONDS and PostgreSQL cancelled it."""

    status = 503
    code = "report_timed_out"

    def __init__(self, timeout_seconds: int):
        super().__init__(f"the report ran longer than the {timeout_seconds} s a report may take; "
                         "ask for a shorter period, or later", RETRY_AFTER_SECONDS)


def _refuse(outcome: int) -> None:
    if outcome == COMPANY_FULL:
        raise _busy(f"{PER_COMPANY} reports of this company are running; "
                    "ask again when one has answered")
    if outcome == SERVICE_FULL:
        raise _busy("the service is running as many reports as it may")


def _busy(detail: str) -> RateLimited:
    return RateLimited(detail, RETRY_AFTER_SECONDS)


def per_process(threads: int) -> int:
    """A process of several threads keeps one for everything else; one of a single thread
    runs a report in it (the service's cap keeps some processes free then)."""
    return max(1, threads - 1)
