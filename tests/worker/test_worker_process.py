"""`python -m worker` as the Procfile runs it, against a Redis of the test's own that it stops
and starts (docs/api.md#availability): idle time and a Redis outage never end the process, upkeep
runs again once Redis is back, SIGTERM ends it with 0, and only settings that cannot work end it
with another status."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.backing_services import ThrowawayRedis
from tests.conftest import TEST_PEPPER

pytestmark = [pytest.mark.redis, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
# Longer than redis-py's default socket timeout (5 s), which used to end an idle worker.
IDLE_SECONDS = 8


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def throwaway_redis(tmp_path):
    server = ThrowawayRedis(tmp_path)
    server.start()
    yield server
    server.kill()


def _start_worker(env: dict, log_path: Path) -> subprocess.Popen:
    log = log_path.open("w")
    return subprocess.Popen([sys.executable, "-m", "worker"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture
def worker_env(database_url, throwaway_redis):
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DATABASE_URL=database_url, API_KEY_PEPPER=TEST_PEPPER,
               PUBLIC_BASE_URL="http://127.0.0.1:8000",
               REDIS_URL=throwaway_redis.url,
               RQ_QUEUE="worker-process-test", UPKEEP_INTERVAL_SECONDS="1")
    return env


def _upkeep_runs(log_path: Path) -> int:
    return log_path.read_text().count("run_periodic_tasks")


def test_the_worker_outlives_idle_time_and_a_redis_restart(worker_env, throwaway_redis, tmp_path):
    log_path = tmp_path / "worker.log"
    worker = _start_worker(worker_env, log_path)
    try:
        assert _wait_for(lambda: _upkeep_runs(log_path) >= 1, 30), log_path.read_text()
        time.sleep(IDLE_SECONDS)
        assert worker.poll() is None, log_path.read_text()

        throwaway_redis.kill()
        time.sleep(IDLE_SECONDS)
        assert worker.poll() is None, log_path.read_text()
        runs_before = _upkeep_runs(log_path)

        throwaway_redis.start()
        assert _wait_for(lambda: _upkeep_runs(log_path) > runs_before, 60), log_path.read_text()
        assert worker.poll() is None

        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, log_path.read_text()
    finally:
        if worker.poll() is None:
            worker.kill()


def test_sigterm_while_redis_is_away_still_exits_0(worker_env, throwaway_redis, tmp_path):
    log_path = tmp_path / "worker.log"
    worker = _start_worker(worker_env, log_path)
    try:
        assert _wait_for(lambda: _upkeep_runs(log_path) >= 1, 30), log_path.read_text()
        throwaway_redis.kill()
        time.sleep(3)  # into RQ's reconnect backoff
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, log_path.read_text()
    finally:
        if worker.poll() is None:
            worker.kill()


@pytest.mark.parametrize("change, says", [
    ({"REDIS_URL": ""}, "REDIS_URL must be set"),
    ({"UPKEEP_INTERVAL_SECONDS": "0"}, "UPKEEP_INTERVAL_SECONDS must be at least 1"),
])
def test_settings_that_cannot_work_end_it_with_status_2(worker_env, tmp_path, change, says):
    log_path = tmp_path / "worker.log"
    worker = _start_worker({**worker_env, **change}, log_path)
    assert worker.wait(timeout=60) == 2
    assert says in log_path.read_text()
