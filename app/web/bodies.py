"""A request's JSON body, read and decoded once for every operation (the idempotency
fingerprint and the schema see the same value). Whatever the server cannot decode or
represent is a 422 on the body (docs/api.md#errors), never a 500 further on; a body that cannot even
be read as HTTP (broken chunked framing) is a 400."""
from __future__ import annotations

import json
import re

from flask import Request, Response, g, request
from gunicorn.http.errors import ParseException
from werkzeug.exceptions import RequestEntityTooLarge

from app.services.errors import DomainError, InvalidField

MAX_DEPTH = 100
# A lone surrogate can only arrive as a \u escape: the UTF-8 decoding refuses encoded ones.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


# What reading a body raises when its framing is broken: gunicorn's parse errors (a chunk size
# that is not hex, a chunk without its CRLF), and OSError from other servers' decoders and from
# a client that stops sending halfway.
UNREADABLE = (ParseException, OSError)


def raw_body() -> bytes:
    """The current request's body as sent, read once."""
    req = request._get_current_object()  # one proxy lookup, not a failed one (app/web/requests.py)
    return read_framed(lambda: req.get_data(cache=True))


def read_framed(read):
    """`read()` of the request's body, its framing errors a 400 `bad_request`
    (docs/api.md#errors)."""
    try:
        return read()
    except UNREADABLE:
        raise DomainError("the request body cannot be read: its chunked framing is broken",
                          code="bad_request", status=400) from None


def chunked_body_exceeds(req: Request, limit: int) -> bool:
    """A body sent without Content-Length (chunked) is read here, up to `limit`, which must be
    the request's `max_content_length`. werkzeug stops there without a word, which would leave a
    truncated body to fail as bad JSON; one byte more on the wire means it was too large."""
    if not req.headers.get("Transfer-Encoding"):
        return False
    return len(raw_body()) >= limit and bool(read_framed(lambda: req.environ["wsgi.input"].read(1)))


# What an answer leaves of its request's body is read in parts of this size and dropped.
_DROP_PART = 65536


def read_what_is_left(response: Response) -> Response:
    """After an answer given before the request's body was read in full (a 401, 403 or 415, a
    refused header), the rest of the body is read and dropped, up to MAX_CONTENT_LENGTH, so the
    connection can carry the client's next request as the answer announced.

    gunicorn's threaded worker announces a kept connection on every answer it may keep (it
    drops a `Connection` header the application sets, as one that concerns the hop alone,
    gunicorn/http/wsgi.py), then reads at most 64 KiB of what the application left and closes
    the connection when more is left: nginx, or a client that keeps its connections, sent its
    next request on a connection being closed, and nginx answered a POST sent on it with a
    502. Read here, the body leaves nothing for gunicorn to refuse; nginx has sent it whole
    already (it buffers each body, up to the same limit). A body over the limit, or one whose
    chunked framing breaks, is left: gunicorn closes that connection."""
    req = request._get_current_object()  # one proxy lookup (app/web/requests.py)
    environ = req.environ
    if not environ.get("CONTENT_LENGTH") and not environ.get("HTTP_TRANSFER_ENCODING"):
        return response  # no body: most requests, nothing to look at
    try:
        stream = req.stream  # werkzeug's, bounded by MAX_CONTENT_LENGTH
        while stream.read(_DROP_PART):
            pass
    except (RequestEntityTooLarge, *UNREADABLE):
        pass
    return response


def json_body():
    """The decoded body of the current request; None when it has none."""
    state = g._get_current_object()  # one proxy lookup, not three (app/web/requests.py)
    if "json_body" not in state:
        state.json_body = decode(raw_body())
    return state.json_body


def decode(raw: bytes):
    if not raw:
        return None
    try:
        text = raw.decode("utf-8")
        value = json.loads(text)
    except ValueError as error:  # bad UTF-8 and bad JSON are ValueErrors too
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            raise InvalidField(["body"], "the body is not valid JSON", "json_invalid") from None
        # Python's limit on the digits of an integer (4,300).
        raise InvalidField(["body"], "a number in the body has too many digits",
                           "json_number_too_long") from None
    except RecursionError:
        raise _too_deep() from None
    # Only a body with more than MAX_DEPTH brackets can nest that deep: most are never walked.
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise _too_deep()
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(value)
    return value


def _too_deep() -> InvalidField:
    return InvalidField(["body"], f"the body nests deeper than {MAX_DEPTH} levels", "json_too_deep")


def _children(value, loc: list):
    if isinstance(value, dict):
        return [(child, loc + [key]) for key, child in value.items()]
    if isinstance(value, list):
        return [(child, loc + [index]) for index, child in enumerate(value)]
    return []


def _depth(value) -> int:
    """How deep containers nest (a scalar body is 0, `[]` is 1)."""
    if not isinstance(value, (dict, list)):
        return 0
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _refuse_lone_surrogates(value) -> None:
    """A string no UTF-8 can carry (a half of a UTF-16 pair): neither the database nor the
    idempotency record could store it. Named where it is, key or value."""
    pending = [(value, ["body"])]
    while pending:
        node, loc = pending.pop()
        for text in ([node] if isinstance(node, str) else list(node) if isinstance(node, dict) else []):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidField(loc, "must not contain a lone UTF-16 surrogate",
                                   "string_unicode") from None
        pending.extend(_children(node, loc))
