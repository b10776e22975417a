"""What the web's gunicorn tells its log (app.serving).

- No access line: the app logs each request once, by route template, where gunicorn's line would
  carry the raw path (ServingLog), and gunicorn would build each request's fields for it anyway.
- A request it cannot parse is told by the error's name and the request's method, never the
  rest of the line or a header. gunicorn's own warning ("Invalid request from ip=…: Invalid
  HTTP request line: 'GET /cards/<token>\\x7f HTTP/1.1'") and the HTML 400 it answers with quote
  what they could not parse: a card token, a gift-card code, an API key in a query or an
  Authorization header (docs/api.md#cards). Every parse error is told by its name instead, whatever
  it carries, so an error gunicorn adds later is covered too (told_by_name, called by the
  worker's handle_error: app/serving_worker.py)."""
from __future__ import annotations

import re

from gunicorn.glogging import Logger
from gunicorn.http.errors import ParseException
from gunicorn.http.message import Request

# A method as registers and browsers send them; anything else read as one is not shown either.
_PLAIN_METHOD = re.compile(r"[A-Z][A-Z-]{0,19}")


class ServingLog(Logger):
    """gunicorn's logger, without its access log: the app logs each request once, by route
    template, where gunicorn's line would carry the raw path (app/serving.py). gunicorn would
    otherwise build each request's log fields (every header and environ entry, escaped) for a
    logger that drops them."""

    def access(self, resp, req, environ, request_time):
        pass


def told_by_name(error: ParseException) -> ParseException:
    """The same error (gunicorn picks the status by its class), saying only its name and the
    method of the request it broke off."""
    method = _method_read(error)
    text = f"{type(error).__name__} (method {method})" if method else type(error).__name__
    told = type(type(error).__name__, (type(error),), {"__str__": lambda self: text})
    copy = told.__new__(told)
    copy.__dict__.update(error.__dict__)
    return copy


def _method_read(error: BaseException) -> str | None:
    """The method gunicorn's parser had read from the request line when it failed (the request
    it was building is on the failing stack), if it looks like one."""
    trace, method = error.__traceback__, None
    while trace is not None:
        parsing = trace.tb_frame.f_locals.get("self")
        if isinstance(parsing, Request) and isinstance(parsing.method, str):
            method = parsing.method
        trace = trace.tb_next
    return method if method and _PLAIN_METHOD.fullmatch(method) else None
