"""LoyaltyApp answers Flask's question (is this a coroutine function?) once per function, and
the same way Flask does; every request has the one null session, which refuses writes as
Flask's own did."""
import pytest
from flask import Flask, session

import app as package
from app import LoyaltyApp


class _Unhashable:
    __hash__ = None

    def __call__(self):
        return "called"


class _View:
    def get(self):
        return "got"

    async def post(self):
        return "posted"


def _plain():
    return "plain"


async def _coroutine():
    return "coroutine"


@pytest.mark.parametrize("func", [_plain, _View().get, _Unhashable()],
                         ids=["function", "bound method", "unhashable callable"])
def test_a_plain_callable_is_called_as_it_is(func):
    assert LoyaltyApp("t").ensure_sync(func) is func
    asked = package._is_coroutine_function.cache_info()
    assert LoyaltyApp("t").ensure_sync(func) is func
    remembered = package._is_coroutine_function.cache_info()
    hashable = not isinstance(func, _Unhashable)
    assert (remembered.hits - asked.hits, remembered.misses - asked.misses) == (hashable, 0)
    assert Flask("t").ensure_sync(func) is func


@pytest.mark.parametrize("func", [_coroutine, _View().post], ids=["function", "bound method"])
def test_a_coroutine_function_goes_to_flasks_own_runner(func, monkeypatch):
    ran = []
    monkeypatch.setattr(Flask, "async_to_sync", lambda self, f: ran.append(f) or "runner")
    for _ in range(2):
        assert LoyaltyApp("t").ensure_sync(func) == "runner"
    assert ran == [func, func]


def test_every_request_has_the_one_null_session_which_refuses_writes():
    web = LoyaltyApp("t")
    seen = []

    @web.get("/")
    def view():
        seen.append(session._get_current_object())
        try:
            session["user"] = "x"
        except RuntimeError as refused:
            return str(refused)
        return "written"

    client = web.test_client()
    answers = [client.get("/").get_data(as_text=True) for _ in range(2)]
    assert all("no secret key was set" in answer for answer in answers)
    assert seen[0] is seen[1] and not seen[0]
    assert "Set-Cookie" not in client.get("/").headers
