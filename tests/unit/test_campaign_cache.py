"""The per-process campaign cache (docs/api.md#tiers: at most 64 MiB of campaigns in a process,
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
from app.services.program.matching import (_cache, _strings, best_for_lines, build,
                                           narrowing)

Row = namedtuple("Row", "id starts_at ends_at accrual_bp skus categories store_ids")
NOW = datetime(2026, 5, 1, 12, tzinfo=timezone.utc)


def row(index: int, *, skus=(), categories=(), stores=(), bp: int = 1000,
        starts: timedelta = timedelta(hours=-1)) -> Row:
    return Row(f"00000000-0000-4000-8000-{index:012d}", NOW + starts, NOW + timedelta(days=7),
               bp, json.dumps(list(skus), ensure_ascii=False),
               json.dumps(list(categories), ensure_ascii=False), json.dumps(list(stores)))


def entry_of(version: int, rows: list[Row]):
    """The entry of these campaigns, every list parsed (as the first read of a company's)."""
    return build(version, rows, {row.id: narrowing(row.skus, row.categories, row.store_ids)
                                 for row in rows})


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
    entry, retained = retained_bytes(lambda: entry_of(7, rows))
    assert retained <= entry.size
    # An upper bound, but not a wasteful one: the budget holds what it says it holds.
    assert entry.size <= 2 * retained


def test_a_new_version_shares_the_sets_of_the_last_and_counts_them_once():
    """A change re-reads the small columns only: the new entry holds the same sets, so building
    it keeps almost nothing more, and the cache, which lets the old entry go, holds one copy."""
    rows = campaigns_of(1, 100, 1000)
    first = entry_of(1, rows)
    cache = BoundedCache(CAMPAIGN_CACHE_BYTES)
    cache.put("company", first)
    renamed, retained = retained_bytes(lambda: build(2, rows, first.narrowings))
    assert all(new.narrowing is old.narrowing
               for new, old in zip(renamed.campaigns, first.campaigns, strict=True))
    assert retained < first.size // 100
    cache.put("company", renamed)
    assert cache.held == renamed.size and cache.latest("company") is renamed


def test_many_companies_never_hold_more_than_the_budget():
    generator = random.Random(15)
    shapes = [campaigns_of(company, generator.randint(1, 30), generator.choice([0, 10, 400]),
                           overlap=generator.random() < 0.3)
              for company in range(300)]
    cache, ever_held = BoundedCache(2 * MIB), 0

    def fill():
        for company, rows in enumerate(shapes):
            cache.put(str(company), entry_of(1, rows))
            assert cache.held <= cache.budget
            assert cache.held == sum(cache.get(c, 1).size for c in cache.companies())
            nonlocal ever_held
            ever_held += 1
        return cache

    _, retained = retained_bytes(fill)
    assert ever_held == 300 and 1 < len(cache.companies()) < 300
    assert retained <= cache.budget  # what the process really keeps, not only the accounting


def _sized(version: int, size: int):
    entry = entry_of(version, [])
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
    entry = entry_of(1, [row(0, skus=["X"], stores=["shop-1"], bp=2000),
                         row(1, skus=["X"], categories=["milk"], bp=1500,
                             starts=timedelta(days=1)),
                         row(2, categories=["milk"], bp=1000),
                         row(3, bp=500)])
    first, second, third, everything = entry.campaigns
    at_shop = entry.running("shop-1", NOW)
    elsewhere = entry.running("shop-2", NOW)
    assert best_for_lines(at_shop, [("X", None)]) == [first]
    assert best_for_lines(elsewhere, [("X", None), ("Y", "milk")]) == [everything, third]
    assert best_for_lines(entry.running("shop-2", NOW + timedelta(days=2)),
                          [("X", "milk")]) == [second]
    assert best_for_lines(entry.running(None, NOW), [("X", None)]) == [everything]
    assert best_for_lines((), [("X", "milk"), (None, None)]) == [None, None]


def test_every_line_of_a_large_receipt_gets_the_campaign_a_scan_would_give():
    """The receipt is matched campaign by campaign against the lines still without one; it
    must give each line what looking through the campaigns line by line gives."""
    generator = random.Random(20)
    def some(prefix: str, among: int, count: int) -> list[str]:
        return [f"{prefix}{value}" for value in generator.sample(range(among), count)]

    rows = [row(c, bp=3000 - c, skus=some("S", 400, 60) if c % 3 else [f"S{c}"],
                categories=some("C", 30, 2) if c % 2 else [])
            for c in range(40)]
    # One naming neither, in the middle, at store A only: there it takes every line left.
    rows.insert(20, row(99, bp=2980, stores=["A"]))
    entry = entry_of(1, rows)
    lines = [(generator.choice([f"S{generator.randrange(500)}", None]),
              generator.choice([f"C{generator.randrange(40)}", None])) for _ in range(1000)]
    for store, unmatched in (("A", False), ("B", True)):
        running = entry.running(store, NOW)

        def scan(sku, category, running=running):
            return next((campaign for campaign in running if campaign.narrowing.every_line
                         or sku in campaign.narrowing.skus
                         or category in campaign.narrowing.categories), None)

        expected = [scan(*line) for line in lines]
        assert best_for_lines(running, lines) == expected
        assert (None in expected) is unmatched and len(set(expected)) > 10


@pytest.mark.parametrize("text", [
    "[]", '["A"]', '["A", "B"]', '["A","B"]', '[ "A" ]',
    json.dumps(["Кофе", "чай"], ensure_ascii=False),
    json.dumps(['say "hi"', "x"]), json.dumps(['a", "b', "c"]), json.dumps(["back\\slash"]),
    json.dumps(["tab\there"]), json.dumps(["", "x"]),
])
def test_a_stored_list_reads_as_json_reads_it(text):
    assert _strings(text) == json.loads(text)
