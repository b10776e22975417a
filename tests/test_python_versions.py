"""Python 3.11, 3.12 and 3.13 all install the service and pass its suite. `make test` runs on
one of them; this builds a virtual environment with each other one found on the machine and
runs the SQLite suite there (the processes-starting tests, marked slow, stay with the main run)."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ON_POSTGRES

ROOT = Path(__file__).resolve().parent.parent
SUPPORTED = ("3.11", "3.12", "3.13")


def _version_of(python: str) -> str | None:
    try:
        found = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return found.stdout.strip() if found.returncode == 0 else None


def other_interpreters() -> dict[str, str]:
    """One interpreter per supported version other than this one's: on PATH, or where pyenv
    keeps its versions."""
    candidates = [shutil.which(f"python{v}") for v in SUPPORTED]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[123].*/bin/python3")))
    running = "%d.%d" % sys.version_info[:2]
    found: dict[str, str] = {}
    for python in filter(None, candidates):
        version = _version_of(python)
        if version in SUPPORTED and version != running and version not in found:
            found[version] = python
    return found


INTERPRETERS = other_interpreters()


@pytest.mark.slow
@pytest.mark.skipif(ON_POSTGRES, reason="the SQLite pass runs this")
@pytest.mark.parametrize("version", sorted(INTERPRETERS) or [None])
def test_the_suite_passes_on_each_supported_python(version, tmp_path):
    if version is None:
        pytest.skip(f"no other Python of {', '.join(SUPPORTED)} on this machine")
    venv = tmp_path / "venv"
    subprocess.run([INTERPRETERS[version], "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", "-e", ".[test]"],
                             cwd=ROOT, capture_output=True, text=True)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    suite = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-m", "not postgres and not redis and not slow"],
                           cwd=ROOT, env=env, capture_output=True, text=True)
    assert suite.returncode == 0, suite.stdout[-5000:] + suite.stderr[-2000:]
    assert " passed" in suite.stdout.splitlines()[-1]
