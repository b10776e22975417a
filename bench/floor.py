"""The raw-SQL floor of a checkout: the very statements the app sends, replayed through bare
psycopg2 connections, without HTTP, Flask or SQLAlchemy.

`capture()` plays one checkout (session → quote → hold → commit → return) through the app in
this process and records, per request, every statement with its parameters as SQLAlchemy
hands them to the driver. `replay()` sends them again, one transaction per request, with
fresh ids, keys and receipt ids, the client's own customer and terminal, and times shifted
to now, so each replay is a new checkout with the same database work. What the app costs
beyond this floor is our Python.

bench/checkout.py measures it in the same run as the app; `python bench/checkout.py --skip
http,paused` seeds the same shop and measures only the floor.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import psycopg2
from sqlalchemy import event

from app.models.idempotency import DIGEST_BYTES

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
STEPS = ("open", "quote", "hold", "commit", "return")


@dataclass
class Register:
    """What a register brings to a checkout: its key, terminal and customer."""

    pos_key: str
    terminal_id: str
    customer_id: str
    cashier_id: str


def ceiling_path(token: uuid.UUID, customer: str, terminal: str, step: str) -> str:
    """Where the serving stack's ceiling (bench/ceiling_app.py) takes a checkout's step: the
    token names the checkout, so any of its workers derives the same new ids for it."""
    return f"/ceiling/{token}/{customer}/{terminal}/{step}"


def ceiling_step(path: str) -> tuple[uuid.UUID, str, str, str]:
    """`ceiling_path`'s parts again: the checkout's token, customer, terminal and step."""
    _, ceiling, token, customer, terminal, step = path.split("/")
    if ceiling != "ceiling" or step not in STEPS:
        raise ValueError(f"not a ceiling's path: {path}")
    return uuid.UUID(token), customer, terminal, step


@dataclass
class Trace:
    steps: dict[str, list[tuple[str, object, bool]]] = field(default_factory=dict)
    volatile: dict[str, str] = field(default_factory=dict)  # captured value → its kind
    # each request's answer as the app gave it: status, headers, body (bench/ceiling_app.py)
    answers: dict[str, tuple[int, list, bytes]] = field(default_factory=dict)
    register: Register | None = None
    captured_at: datetime | None = None

    def statements(self) -> dict[str, int]:
        return {step: len(statements) for step, statements in self.steps.items()}


def capture(app, headers: dict, register: Register, lines: list[dict]) -> Trace:
    """One checkout through the app in this process, every statement recorded per request."""
    from app.database.engine import utcnow

    client = app.test_client()
    trace = Trace(register=register, captured_at=utcnow())
    current: list = []

    def record(conn, cursor, statement, parameters, context, executemany):
        current.append((statement, parameters, executemany))

    def call(step: str, method: str, path: str, body: dict) -> dict:
        key = uuid.uuid4().hex
        trace.volatile[key] = "key"
        current.clear()
        response = client.open(path, method=method, json=body, headers={
            **headers, "Idempotency-Key": key, "X-Loyalty-Pos-Key": register.pos_key})
        assert response.status_code < 300, (step, response.status_code, response.get_json())
        trace.steps[step] = list(current)
        trace.answers[step] = (response.status_code, list(response.headers.items()),
                               response.get_data())
        return response.get_json()

    engine = app.extensions["engine"]
    event.listen(engine, "before_cursor_execute", record)
    try:
        receipt = f"FLOOR-{uuid.uuid4().hex}"
        trace.volatile[receipt] = "receipt"
        session = call("open", "POST", "/v1/checkout-sessions", {
            "externalReceiptId": receipt, "customerId": register.customer_id,
            "cashier": {"externalId": register.cashier_id, "name": "Cashier"}})
        quote = call("quote", "POST", f"/v1/checkout-sessions/{session['id']}/quote",
                     {"lines": lines})
        call("hold", "POST", f"/v1/checkout-sessions/{session['id']}/hold",
             {"quoteId": quote["id"]})
        sale = call("commit", "POST", f"/v1/checkout-sessions/{session['id']}/commit",
                    {"quoteId": quote["id"]})
        call("return", "POST", f"/v1/sales/{sale['id']}/returns",
             {"lines": [{"lineId": lines[0]["lineId"], "quantity": "1"}]})
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return trace


class CapturedIds:
    """The values a trace's capture made (ids, idempotency keys, receipt ids), each replay's to
    make anew, and which of them each step's statements carry."""

    def __init__(self, trace: Trace, stable: set[str]):
        self.trace = trace
        # Ids the capture made (session, quote, hold, sale, entries, events...): every replay
        # makes its own. Ids that existed before (company, key, store...) stay.
        texts = {step: _texts(statements) for step, statements in trace.steps.items()}
        self.made = sorted({value for step_texts in texts.values() for value in step_texts
                            if UUID.match(value) and value not in stable})
        # A value is carried whole or inside a JSON text (an event's payload).
        self.in_step = {step: {value for value in (*self.made, *trace.volatile)
                               if any(value in text for text in step_texts)}
                        for step, step_texts in texts.items()}

    def fresh(self, register: Register, new_id=lambda captured: uuid.uuid4(),
              step: str | None = None) -> dict:
        """The captured values mapped to this checkout's: `new_id(captured)` gives each made
        id, key and receipt its new one; with `step`, only those its statements carry
        (bench/ceiling_app.py derives them from a token, request by request)."""
        mine = self.trace.register
        wanted = self.in_step[step] if step else None
        fresh = {mine.customer_id: register.customer_id, mine.terminal_id: register.terminal_id,
                 mine.pos_key: register.pos_key}
        for value, kind in self.trace.volatile.items():
            if wanted is None or value in wanted:
                made = new_id(value).hex
                fresh[value] = made if kind == "key" else f"FLOOR-{made}"
        for value in self.made:
            if wanted is None or value in wanted:
                fresh.setdefault(value, str(new_id(value)))
        return fresh


class Replayer:
    """Replays a trace on one connection; each call to `checkout` is a fresh checkout."""

    def __init__(self, database_dsn: str, trace: Trace, stable: set[str]):
        # A request is one transaction, begun and committed by the driver, as the app's are.
        self.connection = psycopg2.connect(database_dsn)
        self.trace = trace
        self.ids = CapturedIds(trace, stable)

    def _value(self, value, fresh: dict, shift: timedelta):
        if isinstance(value, psycopg2.Binary) and len(value.adapted) == DIGEST_BYTES:
            # An idempotency record's key digest: this checkout's key is new, so is its digest.
            return fresh.setdefault(value.adapted, psycopg2.Binary(uuid.uuid4().bytes))
        if isinstance(value, str):
            if value in fresh:
                return fresh[value]
            if len(value) > 40 and ("{" in value or "[" in value):  # JSON carrying ids
                for old, new in fresh.items():
                    if isinstance(old, str) and old in value:
                        value = value.replace(old, new)
            return value
        if isinstance(value, datetime):
            return value + shift
        return value

    def _params(self, parameters, fresh, shift):
        if isinstance(parameters, dict):
            return {name: self._value(value, fresh, shift) for name, value in parameters.items()}
        if isinstance(parameters, (list, tuple)):  # a tuple stays one: an IN list
            return type(parameters)(self._params(p, fresh, shift)
                                    if isinstance(p, (dict, list, tuple))
                                    else self._value(p, fresh, shift) for p in parameters)
        return parameters

    def replay_step(self, cursor, step: str, fresh: dict, shift: timedelta) -> None:
        """One request's statements, as captured, with this checkout's ids and times, in a
        transaction of their own."""
        for statement, parameters, many in self.trace.steps[step]:
            params = self._params(parameters, fresh, shift)
            if many and isinstance(params, list):  # a batch of "insertmanyvalues"
                cursor.executemany(statement, params)  # arrives as one dict
            else:
                cursor.execute(statement, params)
                if cursor.description is not None:
                    cursor.fetchall()
        cursor.connection.commit()  # the request's transaction, as the app ends it

    def checkout(self, register: Register, steps, now: datetime, on_step) -> None:
        """One checkout of `steps` for `register`; `on_step(step)` is called as each step
        starts and returns a callable to call when it is done (the caller's timer)."""
        fresh = self.ids.fresh(register)
        shift = now - self.trace.captured_at
        for step in steps:
            done = on_step(step)
            with self.connection.cursor() as cursor:
                self.replay_step(cursor, step, fresh, shift)
            done()

    def history(self, registers: list[Register], now: datetime, days: int = 30) -> None:
        """A shop's past: one whole checkout per register given, spread over `days` before
        `now` (seeding, not measuring; each step commits, as the app's did)."""
        with self.connection.cursor() as cursor:
            for index, register in enumerate(registers):
                fresh = self.ids.fresh(register)
                when = now - timedelta(days=days * (len(registers) - index) / len(registers))
                shift = when - self.trace.captured_at
                for step in STEPS if index % 10 == 9 else STEPS[:-1]:  # 1 in 10 returns
                    self.replay_step(cursor, step, fresh, shift)

    def close(self) -> None:
        self.connection.close()


def _texts(statements) -> list[str]:
    return [value for _, parameters, _ in statements for value in _flat(parameters)
            if isinstance(value, str)]


def _flat(parameters):
    if isinstance(parameters, dict):
        yield from parameters.values()
    elif isinstance(parameters, (list, tuple)):
        for item in parameters:
            yield from _flat(item) if isinstance(item, (dict, list, tuple)) else (item,)

