"""`make run` from a fresh clone: it installs what serving needs (not the test extras),
migrates, prints a demo key and serves /v1/company to that key over the embedded SQLite
default."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ON_POSTGRES
from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
KEY = re.compile(r"^lk_live_[A-Za-z0-9_-]{49}$")


@pytest.mark.slow
@pytest.mark.skipif(ON_POSTGRES, reason="the embedded default is SQLite: the SQLite pass runs this")
def test_make_run_from_a_fresh_clone_serves_the_printed_key(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV", "FLASK_APP")}
    server = subprocess.Popen(["make", "run", f"PORT={port}"], cwd=clone, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        key = None
        deadline = time.monotonic() + 600
        output = []
        while key is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            output.append(line)
            if KEY.match(line.strip()):
                key = line.strip()
        assert key, "no key printed:\n" + "".join(output[-40:])

        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/company",
                                         headers={"Authorization": f"Bearer {key}"})
        while True:
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    assert response.status == 200
                    assert b'"name"' in response.read()
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "".join(output[-40:])
                time.sleep(0.5)
        assert (clone / "instance" / "loyalty.db").exists()
        # Serving installs the package alone: none of the test extras.
        probe = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", "import pytest"],
                               capture_output=True)
        assert probe.returncode != 0
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        shutil.rmtree(clone / ".venv", ignore_errors=True)
