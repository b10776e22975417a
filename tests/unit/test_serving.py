"""The web's serving settings (app/serving.py): gunicorn's own lines about a request leave out
what the client sent (app.web.logs.SecretsMasked), and nginx drops an idle connection to an
instance before the instance would close it."""
from __future__ import annotations

import logging
import re
from pathlib import Path

from app.web.logs import SecretsMasked

TOKEN = "c_9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def _filtered(message: str, *args) -> str:
    record = logging.LogRecord("gunicorn.error", logging.WARNING, __file__, 1, message, args, None)
    assert SecretsMasked().filter(record)
    return record.getMessage()


def test_a_request_gunicorn_cannot_parse_is_told_by_the_kind_of_error_alone():
    told = {
        f"Invalid HTTP request line: 'GET /cards/{TOKEN}\\x7f HTTP/1.1'": "Invalid HTTP request line",
        f"Invalid HTTP Header: 'Authorization Bearer {TOKEN}'": "Invalid HTTP Header",
        f"Invalid HTTP method: \"{TOKEN}\"": "Invalid HTTP method",
        "Request Line is too large (9000 > 4094)": "Request Line is too large (9000 > 4094)",
    }
    for error, kind in told.items():
        assert _filtered(f"Invalid request from ip=192.0.2.7: {error}") == (
            f"Invalid request from ip=192.0.2.7: {kind} (what was sent is not shown)")


def test_a_request_whose_handling_failed_is_told_by_its_method_alone():
    assert _filtered("Error handling request %s %s", "GET", f"/cards/{TOKEN}") == (
        "Error handling request GET (path not shown)")
    assert _filtered("Error handling request %s", f"/v1/gift-cards/{TOKEN}") == (
        "Error handling request ? (path not shown)")
    assert TOKEN not in _filtered("Error handling request %s %s", f"GET{TOKEN}", "/")


def test_other_lines_pass_as_they_are():
    assert _filtered("Booting worker with pid: %s", 42) == "Booting worker with pid: 42"


def test_nginx_drops_an_idle_connection_before_an_instance_closes_it():
    """What keeps a rolling restart whole with kept connections: nginx never sends a POST on a
    connection the instance is closing, because it drops its idle ones first, both while the
    instance serves (its keepalive) and while it stops (gunicorn's linger for kept ones)."""
    from gunicorn.workers import gthread

    from app import serving

    site = (Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "loyalty.conf").read_text()
    [nginx_idle] = re.findall(r"^\s*keepalive_timeout\s+(\d+)s;", site, re.MULTILINE)
    assert int(nginx_idle) < gthread.STOP_KEEPALIVE_LINGER <= serving.keepalive
    assert serving.worker_class == "gthread" and serving.threads > 1
