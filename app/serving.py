"""gunicorn's settings for the Procfile's `web` line (`gunicorn --config python:app.serving`).

Kept in code rather than on the command line so that every deployment serves the same way and
the settings can say why they are what they are."""
import os
import shutil
import tempfile
from pathlib import Path

from app.config import DEFAULT_WEB_THREADS

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
# The platform's convention: WEB_CONCURRENCY sizes the web process (processes), WEB_THREADS
# each process's threads. gunicorn's threaded worker (gthread), as it ships. For a host of two
# cores: three processes, so that both cores have Python to run while one process's threads all
# wait on PostgreSQL (each process runs Python on one core at a time); two threads each, so that
# one client that stalls halfway through its request (a half-sent header, a slow body) holds one
# thread while the other goes on answering that process's connections. More threads a process
# buy nothing on two cores but turns at the interpreter: measured under the register's load, two
# processes of four threads served as much as two of two with the paused registers' p99 over
# 25 ms; three of two served 11-23 % more checkouts than our former worker of one thread, in the
# same turns on a loaded machine (docs/performance.md).
workers = int(os.environ.get("WEB_CONCURRENCY") or 3)
threads = int(os.environ.get("WEB_THREADS") or DEFAULT_WEB_THREADS)
worker_class = "gthread"
# A client's connection is kept for its next request (a register's next step, nginx's next
# request to this instance): no connect and close a request. nginx closes an idle connection to
# an instance after 1 s (deploy/nginx/loyalty.conf), sooner than this and sooner than the two
# seconds a stopping gthread worker still answers on its kept connections (with
# `Connection: close`), so nginx never sends a request on one this side is closing.
keepalive = 5
# SIGTERM: requests in flight finish within this many seconds (the service's graceful stop).
# Connections the listening socket takes until the last worker exits are reset unserved; nginx
# sends a request with an Idempotency-Key on one of them once more (deploy/nginx/loyalty.conf).
graceful_timeout = 30
# gunicorn's control socket lives under the home directory, shared by every gunicorn on the
# host; we do not use it.
control_socket_disable = True
# gunicorn's own lines (start, workers booting and dying, a request it could not parse) as JSON
# through the app's formatter, on the handler the app's loggers use too, whose filter leaves
# out what the client sent (app.web.logs.SecretsMasked: a card token, a gift-card code
# or a key may be in the path or a header). No access log: the app logs each request once, by
# route template, where gunicorn's line would carry the raw path.
logconfig_dict = {
    "root": {"level": "INFO", "handlers": ["json"]},
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": [], "propagate": True},
        "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
    },
    "filters": {"secrets_masked": {"()": "app.web.logs.SecretsMasked"}},
    "handlers": {"json": {"class": "logging.StreamHandler", "formatter": "json",
                          "filters": ["secrets_masked"], "stream": "ext://sys.stderr"}},
    "formatters": {"json": {"()": "app.web.logs.JsonFormatter"}},
}

# --- metrics across workers (app.web.metrics) ----------------------------------------------------
# Each worker writes its counts to files in PROMETHEUS_MULTIPROC_DIR, and a scrape answered by
# any worker adds them all up. prometheus_client picks that mode when it is first imported, in
# each worker after the fork, so the variable is set here, in the master, before any worker.


def _metrics_directory() -> tuple[str, bool]:
    """The operator's directory, else one of our own (removed when gunicorn exits)."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if given:
        os.makedirs(given, exist_ok=True)
        return given, False
    made = tempfile.mkdtemp(prefix="loyalty-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
    return made, True


METRICS_DIRECTORY, _METRICS_DIRECTORY_OURS = _metrics_directory()


def on_starting(server):
    # Counts a previous run left would be added to this run's.
    for stale in Path(METRICS_DIRECTORY).glob("*.db"):
        stale.unlink()


def child_exit(server, worker):
    # A dead worker's counts stay (they happened); its live gauges go.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, METRICS_DIRECTORY)


def on_exit(server):
    if _METRICS_DIRECTORY_OURS:
        shutil.rmtree(METRICS_DIRECTORY, ignore_errors=True)
