"""gunicorn's settings for the Procfile's `web` line (`gunicorn --config python:app.serving`).

Kept in code rather than on the command line so that every deployment serves the same way and
the settings can say why they are what they are."""
import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
# The platform's convention: WEB_CONCURRENCY sizes the web process; 4 sync workers otherwise.
workers = int(os.environ.get("WEB_CONCURRENCY") or 4)
worker_class = "sync"
# SIGTERM: requests in flight finish within this many seconds (CONTRACT §16).
graceful_timeout = 30
# gunicorn's control socket lives under the home directory, shared by every gunicorn on the
# host; we do not use it.
control_socket_disable = True
