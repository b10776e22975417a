"""The per-process campaign cache (CONTRACT §15: at most 64 MiB of campaigns in a process,
whatever any number of companies do): each company's entry weighs no more than it says, the
cache never holds more than its budget, and it drops the company used least recently."""
from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections import namedtuple
from datetime import datetime, timedelta, timezone

import pytest

from app.services.program.campaign_cache import CAMPAIGN_CACHE_BYTES, MIB, BoundedCache
from app.services.program.matching import _cache, _strings, build

Row = namedtuple("Row", "id starts_at ends_at accrual_bp skus categories store_ids")
NOW = datetime(2026, 5, 1, 12, tzinfo=timezone.utc)


def row(index: int, *, skus=(), categories=(), stores=(), bp: int = 1000,
        starts: timedelta = timedelta(hours=-1)) -> Row:
    return Row(f"00000000-0000-4000-8000-{index:012d}", NOW + starts, NOW + timedelta(days=7),
               bp, json.dumps(list(skus), ensure_ascii=False),
               json.dumps(list(categories), ensure_ascii=False), json.dumps(list(stores)))


def campaigns_of(company: int, count: int, skus: int, *, overlap: bool = False,
                 cyrillic: bool = False) -> list[Row]:
    """`count` campaigns of `skus` skus each; with `overlap`, every campaign names the same
    skus, else each its own."""
    word = "Товар" if cyrillic else "SKU"
    return [row(company * 1000 + c, bp=3000 - c,
                skus=[f"{word}-{0 if overlap else c}-{i:06d}" for i in range(skus)],
                categories=[f"category-{c % 7}-{i}" for i in range(10)],
                stores=[f"store-{company}-{c % 3}"] if c % 2 else [])
            for c in range(count)]


def retained_bytes(make):
    """What `make()`'s result keeps allocated once it returns, as Python's allocator counts it."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        gc.collect()
        return made, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("shape", [
    {"count": 100, "skus": 1000},
    {"count": 100, "skus": 1000, "overlap": True},
    {"count": 20, "skus": 300, "cyrillic": True},
    {"count": 3, "skus": 0},
])
def test_an_entry_weighs_no_more_than_it_says(shape):
    rows = campaigns_of(1, **shape)
    entry, retained = retained_bytes(lambda: build(7, rows))
    assert retained <= entry.size
    # An upper bound, but not a wasteful one: the budget holds what it says it holds.
    assert entry.size <= 2 * retained


def test_many_companies_never_hold_more_than_the_budget():
    generator = random.Random(15)
    shapes = [campaigns_of(company, generator.randint(1, 30), generator.choice([0, 10, 400]),
                           overlap=generator.random() < 0.3)
              for company in range(300)]
    cache, ever_held = BoundedCache(2 * MIB), 0

    def fill():
        for company, rows in enumerate(shapes):
            cache.put(str(company), build(1, rows))
            assert cache.held <= cache.budget
            assert cache.held == sum(cache.get(c, 1).size for c in cache.companies())
            nonlocal ever_held
            ever_held += 1
        return cache

    _, retained = retained_bytes(fill)
    assert ever_held == 300 and 1 < len(cache.companies()) < 300
    assert retained <= cache.budget  # what the process really keeps, not only the accounting


def _sized(version: int, size: int):
    entry = build(version, [])
    entry.size = size
    return entry


def test_the_company_used_least_recently_is_dropped_first():
    cache = BoundedCache(300)
    for company in "abc":
        cache.put(company, _sized(1, 100))
    assert cache.get("a", 1) is not None  # a is used: b is now the oldest
    assert cache.get("c", 2) is None  # another version is no use, and no use of c
    cache.put("d", _sized(1, 100))
    assert cache.companies() == ["c", "a", "d"]
    cache.put("a", _sized(2, 150))  # a's new version replaces its old one, c and d make room
    assert cache.companies() == ["d", "a"] and cache.held == 250
    cache.put("huge", _sized(1, 301))  # larger than the whole budget: not kept, nothing dropped
    assert cache.companies() == ["d", "a"] and cache.get("huge", 1) is None


def test_the_process_cache_holds_64_mib():
    assert _cache.budget == CAMPAIGN_CACHE_BYTES == 64 * MIB


def test_a_line_gets_the_best_campaign_running_at_the_store():
    entry = build(1, [row(0, skus=["X"], stores=["shop-1"], bp=2000),
                      row(1, skus=["X"], categories=["milk"], bp=1500, starts=timedelta(days=1)),
                      row(2, categories=["milk"], bp=1000),
                      row(3, bp=500)])
    first, second, third, everything = entry.campaigns
    at_shop = entry.running("shop-1", NOW)
    elsewhere = entry.running("shop-2", NOW)
    assert entry.best_for_line(at_shop, "X", None) is first
    assert entry.best_for_line(elsewhere, "X", None) is everything  # the second has not begun
    assert entry.best_for_line(entry.running("shop-2", NOW + timedelta(days=2)), "X",
                               "milk") is second
    assert entry.best_for_line(elsewhere, "Y", "milk") is third
    assert entry.best_for_line(entry.running(None, NOW), "X", None) is everything
    assert entry.best_for_line(0, "X", "milk") is None


@pytest.mark.parametrize("text", [
    "[]", '["A"]', '["A", "B"]', '["A","B"]', '[ "A" ]',
    json.dumps(["Кофе", "чай"], ensure_ascii=False),
    json.dumps(['say "hi"', "x"]), json.dumps(['a", "b', "c"]), json.dumps(["back\\slash"]),
    json.dumps(["tab\there"]), json.dumps(["", "x"]),
])
def test_a_stored_list_reads_as_json_reads_it(text):
    assert _strings(text) == json.loads(text)
