"""`make run` from a fresh clone: it installs what serving needs (not the test extras),
migrates, prints a demo key and serves /v1/company to that key over the embedded SQLite
default, with the Procfile's settings (app/serving.py): JSON log lines only, no control socket
under the home directory, and on 127.0.0.1 alone; cards and the interface document name the
port it serves on."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from testbed.ports import free_port
from tests.conftest import ON_POSTGRES

ROOT = Path(__file__).resolve().parent.parent
KEY = re.compile(r"^lk_live_[A-Za-z0-9_-]{49}$")
MAKE_SAYS = re.compile(r"make(\[\d+\])?: ")


def _group_running(group: int) -> bool:
    """Whether a process of the group still runs (zombies left for their parent to reap do not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            _, _, fields = stat.read_text().rpartition(")")
        except OSError:
            continue
        state, _parent, process_group = fields.split()[:3]
        if int(process_group) == group and state != "Z":
            return True
    return False


def _group_ended(group: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while _group_running(group):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow
@pytest.mark.skipif(ON_POSTGRES, reason="the embedded default is SQLite: the SQLite pass runs this")
def test_make_run_from_a_fresh_clone_serves_the_printed_key(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    port, home = free_port(), tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV", "FLASK_APP", "XDG_RUNTIME_DIR",
                        "WEB_CONCURRENCY")}
    env["HOME"] = str(home)
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
        # The port served on is the public address cards and the interface document name.
        enrol = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/customers", method="POST",
            data=json.dumps({"phone": "+79123456789", "firstName": "Anna"}).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(enrol, timeout=5) as response:
            assert json.load(response)["cardUrl"].startswith(f"http://127.0.0.1:{port}/cards/")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=5) as response:
            assert json.load(response)["servers"][0]["url"] == f"http://127.0.0.1:{port}"
        assert (clone / "instance" / "loyalty.db").exists()
        # Serving installs the package alone: none of the test extras.
        probe = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", "import pytest"],
                               capture_output=True)
        assert probe.returncode != 0
        assert not (home / ".gunicorn").exists()  # gunicorn's control socket stays off
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        # make ends at once; gunicorn, in the same group, finishes its graceful stop after it.
        # Its virtualenv goes only once every process of the group has.
        if not _group_ended(server.pid, within=40):
            os.killpg(server.pid, signal.SIGKILL)
            _group_ended(server.pid, within=10)
        server.wait(timeout=10)
        shutil.rmtree(clone / ".venv", ignore_errors=True)

    # Everything the server wrote is a JSON line, as under the Procfile (make's own words on
    # being stopped, "make: *** [Makefile:…: run] Terminated" or a sub-make's "make[1]: *** …",
    # are not the server's).
    written = "".join(output + [server.stdout.read()])
    served = [line for line in written.partition(f"Serving on http://127.0.0.1:{port}\n")[2]
              .splitlines() if not MAKE_SAYS.match(line)]
    assert served and not [line for line in served if not line.startswith("{")], served
    lines = [json.loads(line) for line in served]
    messages = [line["message"] for line in lines if line["logger"] == "gunicorn.error"]
    assert any(message.startswith(f"Listening at: http://127.0.0.1:{port} ") for message in messages)
    assert any(line["logger"] == "app.requests" and line["route"] == "/v1/company" for line in lines)
