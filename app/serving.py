"""gunicorn's settings for the Procfile's `web` line (`gunicorn --config python:app.serving`).

Kept in code rather than on the command line so that every deployment serves the same way and
the settings can say why they are what they are."""
import os
import shutil
import tempfile
from pathlib import Path

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
# The platform's convention: WEB_CONCURRENCY sizes the web process (processes), WEB_THREADS
# each process's threads. Three processes of one thread on a host of two cores: while one waits
# on PostgreSQL the others run, and a process of one thread serves each request in its own loop
# (app/serving_worker.py). Measured under the register's load against two processes of two
# threads: 3 x 1 served 5-6.5 % more checkouts for 4-10 % less of the workers' CPU a checkout,
# 2 x 1 2.5 % more, 4 x 1 3 % fewer (docs/performance.md's git history, round fifteen); against four
# sync workers, 2 x 2 served 6-8 % more, 2 x 4 as much but with the paused registers' p99 over
# 25 ms, 2 x 8 5 % fewer (round fourteen).
workers = int(os.environ.get("WEB_CONCURRENCY") or 3)
threads = int(os.environ.get("WEB_THREADS") or 1)
# gunicorn's threaded worker, telling of a request it cannot parse without quoting it
# (docs/api.md#cards) and answering every connection already made before a graceful stop, so a
# rolling restart behind nginx fails no request (docs/api.md#limits): app/serving_worker.py and the
# modules it names (serving_stop, serving_log, serving_heartbeat).
worker_class = "app.serving_worker.WebWorker"
# A client's connection is kept for its next request (a register's next step, nginx's next
# request to this instance): no connect and close a request. What the gain is made of: without
# keep-alive two processes of four threads served no more than the sync worker did. nginx closes
# an idle connection to an instance after 1 s (deploy/nginx/loyalty.conf), before this, so it
# never sends a request on one this side is closing.
keepalive = 5
# SIGTERM: requests in flight finish within this many seconds (docs/api.md#availability).
graceful_timeout = 30
# gunicorn's control socket lives under the home directory, shared by every gunicorn on the
# host; we do not use it.
control_socket_disable = True
# gunicorn's own lines (start, workers booting and dying) as JSON through the app's formatter, on
# the handler the app's loggers use too. No access log: the app logs each request once, by route
# template, where gunicorn's line would carry the raw path (card tokens, gift-card codes); its
# logger class does not build one either.
logger_class = "app.serving_log.ServingLog"
logconfig_dict = {
    "root": {"level": "INFO", "handlers": ["json"]},
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": [], "propagate": True},
        "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
    },
    "handlers": {"json": {"class": "logging.StreamHandler", "formatter": "json",
                          "stream": "ext://sys.stderr"}},
    "formatters": {"json": {"()": "app.logs.JsonFormatter"}},
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
