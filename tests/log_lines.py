"""The lines the app's log handlers write, as an operator reads them."""
from __future__ import annotations

import io
import json
import logging
from contextlib import contextmanager

from app.web.logs import JsonFormatter


@contextmanager
def written_log():
    """Yields a buffer holding what every JSON handler of the root logger writes meanwhile
    (`create_app` put them there); their streams are given back after."""
    handlers = [handler for handler in logging.getLogger().handlers
                if isinstance(handler.formatter, JsonFormatter)]
    assert handlers, "no JSON log handler: make the app first"
    buffer = io.StringIO()
    previous = [handler.setStream(buffer) for handler in handlers]
    try:
        yield buffer
    finally:
        for handler, stream in zip(handlers, previous):
            handler.setStream(stream)


def lines_of(buffer: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]
