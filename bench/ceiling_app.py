"""The serving stack's ceiling: a WSGI app served as the Procfile's web line serves ours
(gunicorn, its worker and logger, app/serving.py) that does for each of the register's requests
only what no app can leave out. It reads and decodes the body, sends the very statements the
app sends for that request (bench/floor.py's replay, on one connection of its own per thread),
and answers the app's own answer to it, captured. No authentication, idempotency, validation,
rules, Flask or SQLAlchemy: what the app costs beyond this is ours; what this costs beyond the
floor is the stack's (HTTP, gunicorn, a connection a request).

With BENCH_CEILING=flask, the same through a Flask app of one route and no hook: what Flask
itself adds. bench/checkout.py --ceiling serves it beside the app: a register's checkout is
POST /ceiling/<token>/<customer>/<terminal>/<step>, and the token names the checkout, so every
worker derives the same new ids for it from the captured ones.
"""
from __future__ import annotations

import json
import os
import pickle
import threading
import uuid

import floor
from app.database.engine import utcnow

with open(os.environ["BENCH_CEILING_TRACE"], "rb") as stored:
    TRACE, STABLE = pickle.load(stored)
DSN = os.environ["DATABASE_URL"].replace("postgresql+psycopg2://", "postgresql://")
_serving = threading.local()  # each thread's replayer, made after the fork


def replay(path: str, pos_key: str, body: bytes) -> tuple[int, list, bytes]:
    """The request's statements replayed for its checkout; the app's captured answer."""
    checkout, customer, terminal, step = floor.ceiling_step(path)
    json.loads(body)
    _replayer = getattr(_serving, "replayer", None)
    if _replayer is None:
        _replayer = _serving.replayer = floor.Replayer(DSN, TRACE, STABLE)
    register = floor.Register(pos_key, terminal, customer, "")
    fresh = _replayer.ids.fresh(register, lambda captured: uuid.uuid5(checkout, captured), step)
    with _replayer.connection.cursor() as cursor:
        _replayer.replay_step(cursor, step, fresh, utcnow() - TRACE.captured_at)
    return TRACE.answers[step]


def bare(environ, start_response):
    if environ["PATH_INFO"] == "/health":  # bench/harness.py waits for it
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    status, headers, body = replay(environ["PATH_INFO"], environ["HTTP_X_LOYALTY_POS_KEY"],
                                   environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])))
    start_response(f"{status} Created" if status == 201 else f"{status} OK", headers)
    return [body]


def flask_app():
    """The same through Flask: one route, no hook, the body read by Flask's request."""
    from flask import Flask, Response, request

    served = Flask(__name__)
    served.get("/health")(lambda: "ok")

    @served.post("/ceiling/<token>/<customer>/<terminal>/<step>")
    def step(**_):
        status, headers, body = replay(request.path, request.headers["X-Loyalty-Pos-Key"],
                                       request.get_data())
        return Response(body, status, headers)
    return served


app = flask_app() if os.environ.get("BENCH_CEILING") == "flask" else bare
