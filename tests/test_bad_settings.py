"""A process that cannot start for its settings (PostgreSQL named, no API_KEY_PEPPER) says so
in one line naming the setting, never a traceback, and ends: a command with exit 2, the web
(the Procfile's gunicorn) stopped whole instead of booting worker after worker."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MISSING = "API_KEY_PEPPER must be set when DATABASE_URL is not SQLite"


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("API_KEY_PEPPER", "REDIS_URL")}
    # Nothing listens there: the settings are refused before anything is reached.
    env.update(DATABASE_URL=f"postgresql://postgres@127.0.0.1:{free_port()}/loyalty",
               PUBLIC_BASE_URL="https://cards.example.test", PORT=str(free_port()),
               WEB_CONCURRENCY="1")
    return env


def _said(finished: subprocess.CompletedProcess) -> list[str]:
    output = finished.stdout + finished.stderr
    assert "Traceback" not in output, output
    return [line for line in output.splitlines() if "API_KEY_PEPPER" in line]


@pytest.mark.parametrize("command", [["ops", "status"], ["db", "upgrade"],
                                     ["companies", "list"]])
def test_a_command_names_the_missing_setting_in_one_line(command):
    finished = subprocess.run([str(BIN / "flask"), "--app", "wsgi", *command], cwd=ROOT,
                              env=_environment(), capture_output=True, text=True, timeout=120)
    assert _said(finished) == [f"loyalty: cannot start: {MISSING}"]
    assert finished.stdout == "" and finished.returncode == 2


def test_the_web_names_the_missing_setting_and_stops():
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines()
                if line.startswith("web:"))
    command = shlex.split(line.partition(":")[2])
    finished = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT,
                              env=_environment(), capture_output=True, text=True, timeout=120)
    assert _said(finished) == [f"loyalty: cannot start: {MISSING}"]
    assert finished.returncode != 0
