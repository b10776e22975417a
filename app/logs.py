"""Structured logs: one JSON object a line, with the request id. Keys never appear: the
request line names the credential's id, not its key."""
from __future__ import annotations

import json
import logging
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
