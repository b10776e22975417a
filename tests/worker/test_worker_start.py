"""The worker and its upkeep name an unreachable PostgreSQL or Redis in one line (which and
where, never the password), not in tracebacks: at start it exits 1, so a supervisor starts it
again until they answer; once running, it rides an outage out (CONTRACT §16)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from app import create_app
from tests.conftest import TEST_PEPPER
from tests.ports import free_port
from worker.periodic import TASKS, run_periodic_tasks

ROOT = Path(__file__).resolve().parents[2]


def _start(database_url: str, redis_url: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DATABASE_URL=database_url, REDIS_URL=redis_url, API_KEY_PEPPER=TEST_PEPPER,
               PUBLIC_BASE_URL="http://127.0.0.1:8000", RQ_QUEUE="worker-start-test")
    return subprocess.run([sys.executable, "-m", "worker"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("service", ["PostgreSQL", "Redis"])
def test_a_service_away_at_start_is_one_line_and_exit_1(database_url, service):
    port = free_port()
    if service == "PostgreSQL":
        started = _start(f"postgresql://loyalty:secret@127.0.0.1:{port}/loyalty",
                         f"redis://127.0.0.1:{free_port()}/0")
    else:
        started = _start(database_url, f"redis://:secret@127.0.0.1:{port}/0")
    assert started.returncode == 1, started.stderr
    lines = (started.stdout + started.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"worker: cannot reach {service} at 127.0.0.1:{port}: "), lines
    assert "secret" not in lines[0] and "Traceback" not in lines[0]


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
