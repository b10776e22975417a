"""Secrets masked in every log line, whichever library writes it: the texts below are the lines
Flask, httpx, werkzeug and gunicorn write, with a card token, a gift-card code, a push token,
an API key or a pass token in them."""
from __future__ import annotations

import io
import logging
import sys

import pytest

from app.web.logs import JsonFormatter, SecretsMasked, mask_secrets

CARD_TOKEN = "Xq3v_9ZkP-aT1mB7cD2eF4gH5iJ6kL8mN0oP1qR2sT3"
GIFT_CODE = "7KQ2M9XPZ4HT3WNB"
PUSH_TOKEN = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
API_KEY = "lk_live_" + "A" * 43 + "b1C2d3"
PASS_TOKEN = "pAsS-tOkEn_" + "z" * 32


@pytest.mark.parametrize("line, kept", [
    (f"Exception on /cards/{CARD_TOKEN} [GET]", "Exception on /cards/*** [GET]"),
    (f"Exception on /cards/{CARD_TOKEN}.pkpass [GET]", "Exception on /cards/***.pkpass [GET]"),
    (f"Exception on /v1/gift-cards/{GIFT_CODE} [GET]", "Exception on /v1/gift-cards/*** [GET]"),
    (f"Error handling request /v1/gift-cards/{GIFT_CODE.lower()}?x=1",
     "Error handling request /v1/gift-cards/***?x=1"),
    ("Exception on /v1/gift-cards/7kq2 m9xp-z4ht 3wnb [GET]", "Exception on /v1/gift-cards/*** [GET]"),
    ('"GET /v1/gift-cards/7KQ2 M9XP Z4HT 3WNB HTTP/1.1" 200', '"GET /v1/gift-cards/*** HTTP/1.1" 200'),
    (f'HTTP Request: POST https://api.push.apple.com/3/device/{PUSH_TOKEN} "HTTP/2 200 OK"',
     'HTTP Request: POST https://api.push.apple.com/3/device/*** "HTTP/2 200 OK"'),
    (f'127.0.0.1 - - [29/Nov/2026 01:00:00] "GET /cards/{CARD_TOKEN}/x HTTP/1.1" 404 -',
     '127.0.0.1 - - [29/Nov/2026 01:00:00] "GET /cards/***/x HTTP/1.1" 404 -'),
    (f"cardUrl https://cards.example/cards/{CARD_TOKEN}", "cardUrl https://cards.example/cards/***"),
    (f"Authorization: Bearer {API_KEY}", "Authorization: Bearer ***"),
    (f"key={API_KEY}&x=1", "key=lk_live_***&x=1"),
    (f"Authorization: ApplePass {PASS_TOKEN}", "Authorization: ApplePass ***"),
])
def test_a_secret_in_a_line_is_masked_and_the_rest_kept(line, kept):
    assert mask_secrets(line) == kept


def test_route_templates_are_left_as_they_are():
    for route in ("/cards/<token>", "/cards/<token>.pkpass", "/v1/gift-cards/<code>",
                  "/v1/gift-cards/{code}"):
        assert mask_secrets(route) == route


def _written(record: logging.LogRecord) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(SecretsMasked())
    handler.handle(record)
    return stream.getvalue()


def test_the_filter_masks_the_message_its_arguments_and_the_traceback():
    try:
        raise LookupError(f"no card /cards/{CARD_TOKEN}")
    except LookupError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("httpx", logging.WARNING, __file__, 1, "HTTP Request: %s %s",
                               ("POST", f"https://push.example/3/device/{PUSH_TOKEN}"), exc_info)
    written = _written(record)
    assert "/3/device/***" in written and "/cards/***" in written
    assert PUSH_TOKEN not in written and CARD_TOKEN not in written


def test_a_line_that_cannot_be_formatted_is_written_masked():
    record = logging.LogRecord("app", logging.ERROR, __file__, 1, "on /cards/%s %d",
                               (CARD_TOKEN, "not a number"), None)
    written = _written(record)
    assert "could not be formatted" in written and CARD_TOKEN not in written
