"""/metrics under the Procfile's `web` line with two gunicorn workers: the requests of both
workers are counted, whichever worker answers the scrape (docs/api.md#availability)."""
from __future__ import annotations

import http.client
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.mmap_dict import MmapedDict

from testbed.ports import free_port
from tests.api.test_metrics import TOKEN, requests_counted, samples
from tests.conftest import REDIS_URL, TEST_PEPPER

ROOT = Path(__file__).resolve().parent.parent
WEB = next(line.split(":", 1)[1].strip() for line in (ROOT / "Procfile").read_text().splitlines()
           if line.startswith("web:"))
BATCH = 40
MOST_REQUESTS = 2000

pytestmark = pytest.mark.slow


def _get(port: int, path: str, headers: dict | None = None) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


class Web:
    """The Procfile's web line, exactly as written, with two workers."""

    def __init__(self, database_url: str, log: Path, **env: str):
        self.port = free_port()
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("PROMETHEUS_MULTIPROC_DIR", "REDIS_URL", "DATABASE_URL")}
        environment.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            PORT=str(self.port), WEB_CONCURRENCY="2", DATABASE_URL=database_url,
            API_KEY_PEPPER=TEST_PEPPER, PUBLIC_BASE_URL="http://127.0.0.1:8000",
            METRICS_TOKEN=TOKEN, LOG_LEVEL="WARNING", **env)
        if REDIS_URL:
            environment["REDIS_URL"] = REDIS_URL
        self.log = log
        self.process = subprocess.Popen(shlex.split(WEB), cwd=ROOT, env=environment,
                                        stdout=log.open("w"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                if _get(self.port, "/health")[0] == 200:
                    break
            except OSError:
                pass
            assert self.process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        self.sent = 1  # the /health that found it up

    def health_burst(self) -> None:
        """BATCH requests at once: while one worker answers, the other takes the next."""
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: _get(self.port, "/health")[0], range(BATCH)))
        assert statuses == [200] * BATCH
        self.sent += BATCH

    def scrape(self) -> dict:
        status, text = _get(self.port, "/metrics", {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200, text
        return samples(text)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            assert self.process.wait(timeout=60) == 0, self.log.read_text()
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            raise


def health_by_worker(directory: Path) -> dict[str, float]:
    """Each worker's own count of GET /health, from its file in the multiprocess directory."""
    counts = {}
    for path in directory.glob("counter_*.db"):
        for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(str(path)):
            _metric, name, labels, _help = json.loads(key)
            if name == "loyalty_http_requests_total" and labels.get("route") == "/health":
                pid = path.stem.rsplit("_", 1)[1]
                counts[pid] = counts.get(pid, 0) + value
    return counts


def health_total(scraped: dict) -> float:
    return requests_counted(scraped, "/health", "GET", 200)


def test_both_workers_requests_are_counted(database_url, tmp_path):
    directory = tmp_path / "metrics"
    web = Web(database_url, tmp_path / "web.log", PROMETHEUS_MULTIPROC_DIR=str(directory))
    try:
        while len(health_by_worker(directory)) < 2 and web.sent < MOST_REQUESTS:
            web.health_burst()
        by_worker = health_by_worker(directory)
        assert len(by_worker) == 2, by_worker
        assert all(count > 0 for count in by_worker.values())
        scraped = web.scrape()
        assert health_total(scraped) == web.sent == sum(by_worker.values())
        assert scraped[("loyalty_database_up", ())] == 1
        # The scrape itself, answered by one worker, is counted once.
        assert health_total(web.scrape()) == web.sent
    finally:
        web.stop()


def test_without_a_directory_serving_makes_one_and_removes_it(database_url, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    web = Web(database_url, tmp_path / "web.log", TMPDIR=str(scratch))
    try:
        for _ in range(2):
            web.health_burst()
        [made] = scratch.glob("loyalty-metrics-*")
        assert sorted(p.name.split("_")[0] for p in made.glob("*.db"))
        assert health_total(web.scrape()) == web.sent
    finally:
        web.stop()
    assert list(scratch.glob("loyalty-metrics-*")) == []
