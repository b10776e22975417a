"""The ids the serving stack's ceiling (bench/ceiling_app.py) gives a replayed request: its
workers share no state, so each derives a checkout's ids from the token its register sends,
and maps only what the request's statements carry. A worker that derived other ids than the
one before it would send a quote for a session that does not exist. And the ceiling reads its
path back as its registers write it (bench/floor.py holds both halves)."""
import importlib.util
import json
import sys
import uuid
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
spec = importlib.util.spec_from_file_location("bench_floor", BENCH / "floor.py")
floor = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = floor  # its dataclasses look their module up
spec.loader.exec_module(floor)

SESSION, QUOTE, COMPANY = (str(uuid.uuid4()) for _ in range(3))
CAPTURED = floor.Register("pos-0", "terminal-0", "customer-0", "cashier-0")


def _trace() -> "floor.Trace":
    trace = floor.Trace(register=CAPTURED)
    trace.volatile = {"key-open": "key", "key-quote": "key", "R-1": "receipt"}
    trace.steps = {
        "open": [("INSERT session", {"id": SESSION, "company": COMPANY, "receipt": "R-1",
                                     "key": "key-open", "customer": "customer-0"}, False)],
        # The session travels here only inside a JSON text, as an event's payload carries it.
        "quote": [("INSERT quote", {"id": QUOTE, "key": "key-quote",
                                    "payload": json.dumps({"session": SESSION})}, False)],
    }
    return trace


def _by_token(token: uuid.UUID):
    return lambda captured: uuid.uuid5(token, captured)


def test_two_workers_derive_the_same_ids_for_a_checkout():
    register = floor.Register("pos-7", "terminal-7", "customer-7", "cashier-7")
    token = uuid.uuid4()
    one = floor.CapturedIds(_trace(), {COMPANY}).fresh(register, _by_token(token), "quote")
    other = floor.CapturedIds(_trace(), {COMPANY}).fresh(register, _by_token(token), "quote")
    assert one == other
    assert floor.CapturedIds(_trace(), {COMPANY}).fresh(
        register, _by_token(uuid.uuid4()), "quote")[QUOTE] != one[QUOTE]


def test_a_step_maps_what_its_statements_carry_and_the_same_as_the_step_before():
    register = floor.Register("pos-7", "terminal-7", "customer-7", "cashier-7")
    ids, new_id = floor.CapturedIds(_trace(), {COMPANY}), _by_token(uuid.uuid4())
    opened, quoted = ids.fresh(register, new_id, "open"), ids.fresh(register, new_id, "quote")

    assert quoted[SESSION] == opened[SESSION] != SESSION  # found inside the payload's text
    assert {QUOTE, "key-quote"} <= set(quoted) and not {"key-open", "R-1"} & set(quoted)
    assert {SESSION, "key-open", "R-1"} <= set(opened) and QUOTE not in opened
    assert COMPANY not in opened  # it existed before the capture: every replay keeps it
    assert opened["R-1"].startswith("FLOOR-") and opened["customer-0"] == "customer-7"


def test_a_whole_checkout_maps_every_made_value_afresh():
    register = floor.Register("pos-7", "terminal-7", "customer-7", "cashier-7")
    fresh = floor.CapturedIds(_trace(), {COMPANY}).fresh(register)
    assert {SESSION, QUOTE, "key-open", "key-quote", "R-1"} <= set(fresh)
    assert len({fresh[SESSION], fresh[QUOTE], SESSION, QUOTE}) == 4


def test_the_ceiling_reads_back_the_path_its_register_sends():
    token = uuid.uuid4()
    for step in floor.STEPS:
        path = floor.ceiling_path(token, "customer-3", "terminal-3", step)
        assert floor.ceiling_step(path) == (token, "customer-3", "terminal-3", step)


@pytest.mark.parametrize("path", ["/v1/checkout-sessions/a/b/quote",
                                  f"/ceiling/{uuid.uuid4()}/c/t/refund"])
def test_a_path_not_of_the_ceiling_is_refused(path):
    with pytest.raises(ValueError):
        floor.ceiling_step(path)
