"""The worker and its upkeep name an unreachable PostgreSQL or Redis in one line (which and
where, never the password), not in tracebacks: at start it waits for them, since supervisors
give up on a process that keeps failing at start; once running, it rides an outage out
(docs/api.md#availability)."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import redis
from rq import Queue, SimpleWorker, Worker

from app import create_app
from testbed.backing_services import ThrowawayRedis
from testbed.ports import free_port
from tests.conftest import TEST_PEPPER
from tests.worker.test_worker_process import _wait_for
from worker.__main__ import TAKE_UP_JOB, _stop_on_signals, serve, worker_redis
from worker.periodic import TASKS, run_periodic_tasks

ROOT = Path(__file__).resolve().parents[2]


def _start(database_url: str, redis_url: str, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DATABASE_URL=database_url, REDIS_URL=redis_url, API_KEY_PEPPER=TEST_PEPPER,
               PUBLIC_BASE_URL="http://127.0.0.1:8000", RQ_QUEUE="worker-start-test")
    with log.open("w") as output:
        return subprocess.Popen([sys.executable, "-m", "worker"], cwd=ROOT, env=env,
                                stdout=output, stderr=subprocess.STDOUT)


def _lines(log: Path) -> list[str]:
    return log.read_text().strip().splitlines()


@pytest.mark.parametrize("service", ["PostgreSQL", "Redis"])
def test_a_service_away_at_start_is_one_line_and_a_wait(database_url, service, tmp_path):
    port, log = free_port(), tmp_path / "worker.log"
    if service == "PostgreSQL":
        worker = _start(f"postgresql://loyalty:secret@127.0.0.1:{port}/loyalty",
                        f"redis://127.0.0.1:{free_port()}/0", log)
    else:
        worker = _start(database_url, f"redis://:secret@127.0.0.1:{port}/0", log)
    try:
        assert _wait_for(lambda: _lines(log), 30), "nothing said"
        time.sleep(3)  # several more tries: still one line, still running
        assert worker.poll() is None, _lines(log)
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(10) == 0
    lines = _lines(log)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"worker: cannot reach {service} at 127.0.0.1:{port}: "), lines
    assert lines[0].endswith("; waiting for it") and "secret" not in lines[0]


@pytest.mark.redis
def test_a_worker_waiting_for_redis_starts_when_it_answers(database_url, tmp_path):
    server, log = ThrowawayRedis(tmp_path), tmp_path / "worker.log"
    worker = _start(database_url, server.url, log)
    try:
        assert _wait_for(lambda: _lines(log), 30), "nothing said"
        server.start()
        connection = redis.Redis(port=server.port)
        assert _wait_for(lambda: Worker.all(connection=connection), 30), _lines(log)
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
        server.kill()
    assert _lines(log)[1] == "worker: PostgreSQL and Redis answer; starting", _lines(log)


class StoppedWhileStarting(SimpleWorker):
    """SIGTERM in the window where RQ has registered in Redis but not yet taken the signals."""
    dequeue_timeout = 1  # without the stop passed on, the loop ends after its first wait
    taken: list[str] = []

    def _start_scheduler(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)

    def execute_job(self, job, queue):
        self.taken.append(job.func_name)


@pytest.mark.redis
def test_a_stop_before_rq_takes_the_signals_ends_the_loop_before_any_job(tmp_path):
    server = ThrowawayRedis(tmp_path)
    server.start()
    handlers = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    stop = threading.Event()
    try:
        _stop_on_signals(stop)
        queue = Queue("early-stop", connection=worker_redis(server.url))
        serve(queue, stop, StoppedWhileStarting)
        assert stop.is_set() and StoppedWhileStarting.taken == []
        # The take-up job serve enqueued waits for the next worker.
        assert [job.func_name for job in queue.jobs] == [TAKE_UP_JOB]
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        server.kill()


def test_upkeep_with_the_database_away_logs_a_line_per_task_without_traceback(settings, caplog):
    port = free_port()
    database_url = f"postgresql+psycopg2://loyalty:secret@127.0.0.1:{port}/x"
    app = create_app(replace(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0",
                             database_url=database_url))
    with caplog.at_level(logging.WARNING, logger="worker.periodic"):
        results = run_periodic_tasks(app)
    assert results == {name: -1 for name, _ in TASKS}
    skipped = [r for r in caplog.records if r.name == "worker.periodic"]
    assert [r.getMessage().split(": ")[1] for r in skipped] == [name for name, _ in TASKS]
    for record in skipped:
        assert record.levelno == logging.WARNING and record.exc_info is None
        assert f"cannot reach PostgreSQL at 127.0.0.1:{port}: " in record.getMessage()
        assert "secret" not in record.getMessage()
