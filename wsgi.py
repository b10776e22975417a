"""The WSGI entry point gunicorn serves: `gunicorn wsgi:app`, and the app `flask --app wsgi`
commands run in."""
import gc
import os
import sys

from app import create_app
from app.config import ConfigError

# Exit status of a command that cannot start for its settings, as for the operator's other
# bad input (README, Operator commands) and the worker's.
BAD_SETTINGS = 2


def refuse_to_start(error: ConfigError):
    """One line naming the setting, not a traceback. gunicorn (it names itself in
    SERVER_SOFTWARE) prints its application-load error as that line and stops, where any other
    exit of a worker would have it boot the next worker into the same error."""
    message = f"loyalty: cannot start: {error}"
    if os.environ.get("SERVER_SOFTWARE", "").startswith("gunicorn/"):
        from gunicorn.errors import AppImportError

        raise AppImportError(message) from None
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(BAD_SETTINGS)


try:
    app = create_app()
except ConfigError as bad_settings:
    refuse_to_start(bad_settings)
# What start-up built (the app, its schemas, mappers, statements) lives as long as the worker:
# out of the collector's full passes, which otherwise stall a request for ~0.1 s every few
# hundred on these machines.
gc.freeze()
