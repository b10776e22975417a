"""LoyaltyApp answers Flask's question (is this a coroutine function?) once per function, and
the same way Flask does."""
import pytest
from flask import Flask

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
    for _ in range(2):  # asked, then remembered
        assert LoyaltyApp("t").ensure_sync(func) is func
    assert Flask("t").ensure_sync(func) is func


@pytest.mark.parametrize("func", [_coroutine, _View().post], ids=["function", "bound method"])
def test_a_coroutine_function_goes_to_flasks_own_runner(func, monkeypatch):
    ran = []
    monkeypatch.setattr(Flask, "async_to_sync", lambda self, f: ran.append(f) or "runner")
    for _ in range(2):
        assert LoyaltyApp("t").ensure_sync(func) == "runner"
    assert ran == [func, func]
