"""The deployment harness runs in the PostgreSQL pass of `make test` (marker `deployed`).
Its prerequisites are the machine's PostgreSQL programs and redis-server; under CI=true a
missing one fails the run instead of skipping it.

Each scenario's figures are printed at the end of the run (and beside a failure)."""
from __future__ import annotations

import json

import pytest

from testbed.backing_services import missing_programs
from testbed.deployment import Deployment
from tests.conftest import ON_POSTGRES, without

FIGURES = pytest.StashKey[list]()


def pytest_runtest_setup(item):
    reasons = [] if ON_POSTGRES else ["the PostgreSQL pass of `make test`"]
    reasons += missing_programs()
    if reasons:
        without(f"the deployment harness needs {', '.join(reasons)}")


@pytest.fixture(scope="module")
def deployment():
    built = Deployment()
    try:
        yield built.start()
    finally:
        built.close()


@pytest.fixture
def figures(request):
    """`figures(**values)`: one line of the scenario's figures."""
    def note(**values) -> None:
        line = f"{request.node.name}: {json.dumps(values, ensure_ascii=False)}"
        print(line)
        request.config.stash.setdefault(FIGURES, []).append(line)
        request.node.add_report_section("call", "figures", line)
    return note


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    funcargs = getattr(item, "funcargs", {})
    built = funcargs.get("deployment") or funcargs.get("fleet")
    if report.failed and isinstance(built, Deployment) and (built.__dict__.get("web")
                                                           or built.__dict__.get("webs")):
        report.sections.append(("processes' last log lines", built.logs()))
    return report


def pytest_terminal_summary(terminalreporter, config):
    lines = config.stash.get(FIGURES, [])
    if lines:
        terminalreporter.write_sep("-", "deployment figures")
        for line in lines:
            terminalreporter.write_line(line)
