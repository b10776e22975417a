"""Structured logs: one JSON object a line, with the request id. Keys never appear: the
request line names the credential's id, not its key."""
from __future__ import annotations

import json
import logging
import re
import sys
from datetime import datetime, timezone

from flask import g, has_request_context

# One encoder for every line: json.dumps with an option makes a new one each call.
_encode = json.JSONEncoder(ensure_ascii=False).encode


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = g._get_current_object().get("request_id") if has_request_context() else None
        if request_id:
            entry["requestId"] = request_id
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return _encode(entry)


class ServerLineFilter(logging.Filter):
    """gunicorn's own lines about a request, without what the client sent (app/serving.py's
    logging settings put it on gunicorn's error logger). gunicorn tells of a request it cannot
    parse by quoting the line or header it could not read ("Invalid request from ip=…: Invalid
    HTTP request line: 'GET /cards/<token>…'"), and of one whose handling failed by its path
    ("Error handling request GET /v1/gift-cards/<code>"): a card token, a gift-card code or an
    API key travel there. The first keeps the error's kind (its text up to the first quote or
    colon), the second the method alone."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str):
            return True
        if record.msg.startswith("Invalid request from "):
            source, _, error = record.getMessage().partition(": ")
            kind = re.split(r"['\":]", error, maxsplit=1)[0].strip()
            record.msg, record.args = f"{source}: {kind} (what was sent is not shown)", ()
        elif record.msg.startswith("Error handling request") and record.args:
            # (method, path) or (path,): the path goes, a method stays if it looks like one.
            method = record.args[0] if len(record.args) == 2 else ""
            shown = method if isinstance(method, str) and _METHOD.fullmatch(method) else "?"
            record.msg, record.args = "Error handling request %s (path not shown)", (shown,)
        return True


_METHOD = re.compile(r"[A-Z][A-Z-]{0,19}")


def configure_logging(level: str) -> None:
    """One JSON handler on the root logger (gunicorn's settings may have put it there
    already, for its own lines: app.serving), at the configured level."""
    root = logging.getLogger()
    if not any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # What our lines never show is not gathered for each record either (the logging HOWTO's
    # "Optimization"): the calling function's frame, the thread, the process.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
