"""Which campaign gives a quote line its accrual percent (CONTRACT §15).

The register reads its company's campaigns from a cache in the process, never from the
database on each quote: the program's `campaigns_version` comes with the session's context
(statements.CONTEXT, no extra round trip) and every change to a campaign moves it in the same
transaction, so a cached entry is used only while it is the latest committed one. The cache is
bounded by bytes (app/services/program/campaign_cache.py), so each company's entry is kept
compact and says what it weighs.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, repeat

from sqlalchemy import bindparam, select, true

from app.models import Campaign
from app.services.program.campaign_cache import CAMPAIGN_CACHE_BYTES, BoundedCache
from app.services.unit_of_work import UnitOfWork

_CAMPAIGNS = Campaign.__table__
# Largest percent first, then the older campaign: the first that matches a line gives it.
_LIVE = (select(_CAMPAIGNS.c.id, _CAMPAIGNS.c.starts_at, _CAMPAIGNS.c.ends_at,
                _CAMPAIGNS.c.accrual_bp, _CAMPAIGNS.c.skus, _CAMPAIGNS.c.categories,
                _CAMPAIGNS.c.store_ids)
         .where(_CAMPAIGNS.c.company_id == bindparam("company"), _CAMPAIGNS.c.active == true(),
                _CAMPAIGNS.c.ends_at > bindparam("now"))
         .order_by(_CAMPAIGNS.c.accrual_bp.desc(), _CAMPAIGNS.c.created_at, _CAMPAIGNS.c.id))


@dataclass(frozen=True, slots=True)
class LiveCampaign:
    id: str
    starts_at: datetime
    ends_at: datetime
    accrual_bp: int


class CompanyCampaigns:
    """One company's active campaigns not yet ended, best first. Their skus, categories and
    stores are not kept per campaign: each kind is one dict of the company's, from the value to
    a mask of the campaigns naming it (bit i: the i-th campaign), so a value named by several
    campaigns is held once and a line's best campaign is three lookups and the lowest bit set,
    not a scan of the campaigns."""

    __slots__ = ("version", "campaigns", "bits", "by_sku", "by_category", "by_store",
                 "any_line", "any_store", "size")

    def __init__(self, version: int, campaigns: tuple[LiveCampaign, ...], bits: list[int],
                 by_sku: dict, by_category: dict, by_store: dict, any_line: int, any_store: int,
                 size: int):
        self.version, self.campaigns, self.bits = version, campaigns, bits
        self.by_sku, self.by_category, self.by_store = by_sku, by_category, by_store
        self.any_line, self.any_store = any_line, any_store  # naming no sku/category; no store
        self.size = size

    def running(self, store_id: str | None, now: datetime) -> int:
        """The mask of the campaigns that apply to a quote made now at the store (one naming
        stores never applies to a session without a store)."""
        at_store = self.any_store | self.by_store.get(store_id, 0)
        mask = 0
        for bit, campaign in zip(self.bits, self.campaigns):
            if bit & at_store and campaign.starts_at <= now < campaign.ends_at:
                mask |= bit
        return mask

    def best_for_line(self, running: int, sku: str | None,
                      category: str | None) -> LiveCampaign | None:
        """The running campaign with the largest percent covering the line (campaigns do not
        add up)."""
        applying = running & (self.any_line | self.by_sku.get(sku, 0)
                              | self.by_category.get(category, 0))
        if not applying:
            return None
        return self.campaigns[(applying & -applying).bit_length() - 1]


NO_CAMPAIGNS = CompanyCampaigns(0, (), [], {}, {}, {}, 0, 0, 0)


def _masks(bits: list[int], texts: list[str]) -> tuple[dict[str, int], int]:
    """Value → mask of the campaigns whose JSON list names it; and an upper bound of the bytes
    its keys and masks weigh beyond the dict itself. When no value is named twice (the usual
    case) the dict is made in one pass at C speed; else `_merged` goes campaign by campaign."""
    lists = [_strings(text) for text in texts]
    counts = list(map(len, lists))
    masks = dict(zip(chain.from_iterable(lists), chain.from_iterable(map(repeat, bits, counts))))
    if len(masks) == sum(counts):
        return masks, sum(map(_strings_bound, texts, counts))
    return _merged(bits, texts, lists)


def _strings(text: str) -> list[str]:
    """The JSON list of strings `text`, as json.dumps wrote it. Without a backslash no string
    in it has an escape, so splitting on the separators gives them, faster than the parser;
    the quotes counted prove no string held a separator."""
    if text.startswith('["') and text.endswith('"]') and "\\" not in text:
        values = text[2:-2].split('", "')
        if text.count('"') == 2 * len(values):
            return values
    return json.loads(text)


def _merged(bits: list[int], texts: list[str], lists: list[list[str]]) -> tuple[dict, int]:
    """As `_masks`: a campaign naming only new values goes in whole, one sharing values with
    those before it value by value."""
    masks: dict[str, int] = {}
    held = 0
    merged_mask = sys.getsizeof(1 << len(bits))
    for bit, text, values in zip(bits, texts, lists):
        if masks.keys().isdisjoint(values):
            masks.update(zip(values, repeat(bit)))
            held += _strings_bound(text, len(values))
            continue
        for value in values:
            known = masks.get(value)
            if known is None:
                masks[value] = bit
                held += sys.getsizeof(value)
            else:
                if known & (known - 1) == 0:  # one campaign's bit so far: a mask of its own now
                    held += merged_mask
                masks[value] = known | bit
    return masks, held


def _strings_bound(text: str, count: int) -> int:
    """At most what `count` strings parsed from JSON `text` weigh: every character of them is
    in the text, at one byte each when it is ASCII, else at most four."""
    if text.isascii():
        return len(text) + count * sys.getsizeof("")
    return 4 * len(text) + count * sys.getsizeof("\U0001F600")


def build(version: int, rows) -> CompanyCampaigns:
    """The entry from the _LIVE rows (best first)."""
    rows = list(rows)
    campaigns = tuple(LiveCampaign(row.id, row.starts_at, row.ends_at, row.accrual_bp)
                      for row in rows)
    bits = [1 << index for index in range(len(rows))]
    by_sku, sku_bytes = _masks(bits, [row.skus for row in rows])
    by_category, category_bytes = _masks(bits, [row.categories for row in rows])
    by_store, store_bytes = _masks(bits, [row.store_ids for row in rows])
    any_line = any_store = 0
    for bit, row in zip(bits, rows):
        if row.skus == "[]" and row.categories == "[]":
            any_line |= bit
        if row.store_ids == "[]":
            any_store |= bit
    size = (sku_bytes + category_bytes + store_bytes
            + sum(map(sys.getsizeof, (by_sku, by_category, by_store, campaigns)))
            + sys.getsizeof(bits) + sys.getsizeof(any_line) + sys.getsizeof(any_store)
            + sum(_campaign_bytes(campaign, bit) for campaign, bit in zip(campaigns, bits))
            + sys.getsizeof(NO_CAMPAIGNS))
    return CompanyCampaigns(version, campaigns, bits, by_sku, by_category, by_store, any_line,
                            any_store, size)


def _campaign_bytes(campaign: LiveCampaign, bit: int) -> int:
    return (sys.getsizeof(campaign) + sys.getsizeof(campaign.id) + sys.getsizeof(bit)
            + sys.getsizeof(campaign.starts_at) + sys.getsizeof(campaign.ends_at)
            + sys.getsizeof(campaign.accrual_bp))


_cache: BoundedCache[CompanyCampaigns] = BoundedCache(CAMPAIGN_CACHE_BYTES)


def live_campaigns(work: UnitOfWork, company_id: str, version: int,
                   now: datetime) -> CompanyCampaigns:
    """The company's active campaigns not yet ended: from the cache while `version` is the
    one they were read at, else read again."""
    if version == 0:  # no campaign was ever made
        return NO_CAMPAIGNS
    cached = _cache.get(company_id, version)
    if cached is not None:
        return cached
    entry = build(version, work.run(_LIVE, {"company": company_id, "now": now}))
    _cache.put(company_id, entry)
    return entry
