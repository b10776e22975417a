"""Structured logs: one JSON object a line, with the request id. Credentials never appear:
the request line names the credential's id, not its key, and every line, ours or a library's,
is masked on its way to the handler (`SecretsMasked`)."""
from __future__ import annotations

import json
import logging
import re
import sys
from datetime import datetime, timezone

from flask import g, has_request_context

# One encoder for every line: json.dumps with an option makes a new one each call.
_encode = json.JSONEncoder(ensure_ascii=False).encode

MASK = "***"
# What carries a credential in a line's text. A card token is the path segment after /cards/ (a
# .pkpass suffix stays), an APNs push token the one after /3/device/ (httpx's request line), a
# gift-card code the one after /gift-cards/, spaces included (a code is typed in groups): up to
# the next part of the path, a quote, the end of the line, or what follows a path in Flask's and
# an access log's lines (` [GET]`, ` HTTP/1.1`). Route templates (`<token>`) are left as they
# are. The schemes and the API key's prefix find keys and pass tokens quoted from a header.
_SECRET_SEGMENT = re.compile(r"(?i)(/(?:cards|3/device)/)(?![<{])[^/\s?#\"'\\]+?"
                             r"(?=\.pkpass\b|[/\s?#\"'\\]|$)")
_GIFT_CODE_SEGMENT = re.compile(r"(?i)(/gift-cards/)(?![<{])[^/?#\"'\\\r\n]+?"
                                r"(?=[/?#\"'\\\r\n]| \[| HTTP/|$)")
_SECRET_AFTER_SCHEME = re.compile(r"(?i)\b(bearer|applepass)(\s+)[^\s\"',;]+")
_API_KEY = re.compile(r"lk_live_[A-Za-z0-9_-]+")


_MARKERS = ("/cards/", "/3/device/", "/gift-cards/", "bearer", "applepass", "lk_live_")


def mask_secrets(text: str) -> str:
    lowered = text.lower()  # most lines hold no marker: a few substring tests, no pattern
    if not any(marker in lowered for marker in _MARKERS):
        return text
    text = _SECRET_SEGMENT.sub(rf"\g<1>{MASK}", text)
    text = _GIFT_CODE_SEGMENT.sub(rf"\g<1>{MASK}", text)
    text = _SECRET_AFTER_SCHEME.sub(rf"\g<1>\g<2>{MASK}", text)
    return _API_KEY.sub(f"lk_live_{MASK}", text)


class SecretsMasked(logging.Filter):
    """What a client sent never reaches a log line whole: card tokens, gift-card codes, push
    tokens, API keys and pass tokens are masked in a record before any handler writes it — the
    message (Flask's `Exception on /cards/<token> [GET]`, httpx's `POST …/3/device/<push
    token>`) and its traceback — and gunicorn's own lines about a request lose what they quote
    of it. The `fields` of our request lines are left: they hold the route's template and ids,
    never the path. The record itself is changed, so every handler after this one sees it
    masked too. On every JSON handler: the one app/serving.py gives gunicorn, which
    configure_logging finds already filtered, or the one configure_logging adds."""

    def filter(self, record: logging.LogRecord) -> bool:
        _without_request_text(record)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - the handler reports it; never with the raw text
            message = f"a log line that could not be formatted: {record.msg!r}"
        masked = mask_secrets(message)
        if masked != message or record.args:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_text is None:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_secrets(record.exc_text)
        if record.stack_info:
            record.stack_info = mask_secrets(record.stack_info)
        return True


def _without_request_text(record: logging.LogRecord) -> None:
    """gunicorn tells of a request it cannot parse by quoting the line or header it could not
    read ("Invalid request from ip=…: Invalid HTTP request line: 'GET /cards/<token>…'"), and of
    one whose handling failed by its path ("Error handling request GET /v1/gift-cards/<code>"):
    the first keeps the error's kind (its text up to the first quote or colon), the second the
    method alone, as no pattern can know every secret a malformed line may carry."""
    if not isinstance(record.msg, str):
        return
    if record.msg.startswith("Invalid request from "):
        source, _, error = record.getMessage().partition(": ")
        kind = re.split(r"['\":]", error, maxsplit=1)[0].strip()
        record.msg, record.args = f"{source}: {kind} {_NOT_SHOWN}", ()
    elif record.msg.startswith("Error handling request") and record.args:
        # (method, path) or (path,): the path goes, a method stays if it looks like one.
        method = record.args[0] if len(record.args) == 2 else ""
        shown = method if isinstance(method, str) and _METHOD.fullmatch(method) else "?"
        record.msg, record.args = "Error handling request %s (path not shown)", (shown,)


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
        if record.exc_info or record.exc_text:
            entry["exception"] = record.exc_text or self.formatException(record.exc_info)
        return _encode(entry)


# Libraries whose INFO and DEBUG lines repeat what ours say, with addresses we would rather not
# keep: httpx writes every request's URL (APNs push tokens, webhook URLs and their queries),
# hpack every HTTP/2 header it encodes.
QUIETER_LIBRARIES = ("httpx", "httpcore", "hpack", "h2", "alembic")


_METHOD = re.compile(r"[A-Z][A-Z-]{0,19}")
_NOT_SHOWN = "(what was sent is not shown)"


def configure_logging(level: str) -> None:
    """One JSON handler on the root logger (gunicorn's settings may have put it there
    already, for its own lines: app.serving), at the configured level; every JSON handler
    masks secrets, gunicorn's included."""
    root = logging.getLogger()
    if not any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        root.addHandler(handler)
    for handler in root.handlers:
        if isinstance(handler.formatter, JsonFormatter) and not any(
                isinstance(f, SecretsMasked) for f in handler.filters):
            handler.addFilter(SecretsMasked())
    root.setLevel(level)
    for name in QUIETER_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)
    # What our lines never show is not gathered for each record either (the logging HOWTO's
    # "Optimization"): the calling function's frame, the thread, the process.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
