"""Which campaign gives a quote line its accrual percent (docs/api.md#tiers).

The register reads its company's campaigns from a cache in the process, never from the
database on each quote: the program's `campaigns_version` comes with the session's context
(statements.CONTEXT, no extra round trip) and every change to a campaign moves it in the same
transaction, so a cached entry is used only while it is the latest committed one. The cache is
bounded by bytes (app/services/program/campaign_cache.py), so each company's entry says what it
weighs.

A campaign's skus, categories and stores never change once it is made (a PATCH takes only its
name, end and `active`), so a version change reads the live campaigns' small columns again and
the lists only of campaigns the company's previous entry did not hold: renaming, pausing or
ending one parses nothing, and making one parses its lists alone.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, select, true

from app.models import Campaign
from app.services.program.campaign_cache import CAMPAIGN_CACHE_BYTES, BoundedCache
from app.services.unit_of_work import UnitOfWork

_CAMPAIGNS = Campaign.__table__
# Largest percent first, then the older campaign: the first that matches a line gives it.
_LIVE = (select(_CAMPAIGNS.c.id, _CAMPAIGNS.c.starts_at, _CAMPAIGNS.c.ends_at,
                _CAMPAIGNS.c.accrual_bp)
         .where(_CAMPAIGNS.c.company_id == bindparam("company"), _CAMPAIGNS.c.active == true(),
                _CAMPAIGNS.c.ends_at > bindparam("now"))
         .order_by(_CAMPAIGNS.c.accrual_bp.desc(), _CAMPAIGNS.c.created_at, _CAMPAIGNS.c.id))
_LISTS = select(_CAMPAIGNS.c.id, _CAMPAIGNS.c.skus, _CAMPAIGNS.c.categories,
                _CAMPAIGNS.c.store_ids).where(
    _CAMPAIGNS.c.company_id == bindparam("company"),
    _CAMPAIGNS.c.id.in_(bindparam("ids", expanding=True)))


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What a campaign is limited to, fixed at its creation: empty, not limited by that."""
    skus: frozenset[str]
    categories: frozenset[str]
    stores: frozenset[str]
    every_line: bool  # naming neither skus nor categories
    size: int  # the bytes all of it weighs, an upper estimate


@dataclass(frozen=True, slots=True)
class LiveCampaign:
    id: str
    starts_at: datetime
    ends_at: datetime
    accrual_bp: int
    narrowing: Narrowing


Line = tuple  # (sku, category): either may be None


class CompanyCampaigns:
    """One company's active campaigns that had not ended at `since`, best first, each with
    its own sets."""

    __slots__ = ("version", "campaigns", "narrowings", "size", "since")

    def __init__(self, version: int, campaigns: tuple[LiveCampaign, ...], size: int,
                 since: datetime | None = None):
        self.version, self.campaigns, self.size = version, campaigns, size
        self.narrowings = {campaign.id: campaign.narrowing for campaign in campaigns}
        self.since = since  # None: holds every campaign there is (NO_CAMPAIGNS)

    def running(self, store_id: str | None, now: datetime) -> tuple[LiveCampaign, ...]:
        """The campaigns that apply to a sale made at `now` at the store, best first (one
        naming stores never applies to a session without a store)."""
        return tuple(campaign for campaign in self.campaigns
                     if campaign.starts_at <= now < campaign.ends_at
                     and (not campaign.narrowing.stores or store_id in campaign.narrowing.stores))


NO_CAMPAIGNS = CompanyCampaigns(0, (), 0)


def best_for_lines(running: tuple[LiveCampaign, ...],
                   lines: list[Line]) -> list[LiveCampaign | None]:
    """Each line's running campaign with the largest percent covering it (campaigns do not
    add up). Campaign by campaign, best first, against the receipt's skus and categories not
    yet given one: a set test in C per campaign, so 100 campaigns cost about as much for a
    receipt of 4 lines as a scan of them per line, and far less for one of 1,000."""
    if not running:
        return [None] * len(lines)
    best: dict[Line, LiveCampaign] = {}
    left = set(lines)
    skus, categories = {sku for sku, _ in left}, {category for _, category in left}
    for campaign in running:
        narrowing = campaign.narrowing
        if narrowing.every_line:
            best.update(dict.fromkeys(left, campaign))
            break
        if narrowing.skus.isdisjoint(skus) and narrowing.categories.isdisjoint(categories):
            continue
        covered = [line for line in left
                   if line[0] in narrowing.skus or line[1] in narrowing.categories]
        best.update(dict.fromkeys(covered, campaign))
        left.difference_update(covered)
        if not left:
            break
        skus, categories = {sku for sku, _ in left}, {category for _, category in left}
    return [best.get(line) for line in lines]


def narrowing(skus: str, categories: str, store_ids: str) -> Narrowing:
    """A campaign's stored JSON lists, parsed once for as long as the process keeps it."""
    texts = (skus, categories, store_ids)
    sets = tuple(frozenset(_strings(text)) for text in texts)
    size = _NARROWING_BYTES + sum(sys.getsizeof(values) + _strings_bound(text, len(values))
                                  for values, text in zip(sets, texts))
    return Narrowing(*sets, every_line=not sets[0] and not sets[1], size=size)


# The object and its size (an int the small-int cache does not hold); the sets are counted apart.
_NARROWING_BYTES = (sys.getsizeof(Narrowing(frozenset(), frozenset(), frozenset(), True, 0))
                    + sys.getsizeof(1 << 20))


def _strings(text: str) -> list[str]:
    """The JSON list of strings `text`, as json.dumps wrote it. Without a backslash no string
    in it has an escape, so splitting on the separators gives them, faster than the parser;
    the quotes counted prove no string held a separator."""
    if text.startswith('["') and text.endswith('"]') and "\\" not in text:
        values = text[2:-2].split('", "')
        if text.count('"') == 2 * len(values):
            return values
    return json.loads(text)


def _strings_bound(text: str, count: int) -> int:
    """At most what `count` strings parsed from JSON `text` weigh: every character of them is
    in the text, at one byte each when it is ASCII, else at most four."""
    if text.isascii():
        return len(text) + count * sys.getsizeof("")
    return 4 * len(text) + count * sys.getsizeof("\U0001F600")


def build(version: int, rows, narrowings: dict[str, Narrowing],
          since: datetime | None = None) -> CompanyCampaigns:
    """The entry from the _LIVE rows (best first) and their campaigns' narrowings (a campaign
    without one is gone from the database: it applies to nothing)."""
    campaigns = tuple(LiveCampaign(row.id, row.starts_at, row.ends_at, row.accrual_bp,
                                   narrowings[row.id])
                      for row in rows if row.id in narrowings)
    entry = CompanyCampaigns(version, campaigns, 0, since)
    entry.size = (sys.getsizeof(entry) + sys.getsizeof(campaigns)
                  + sys.getsizeof(entry.narrowings) + sum(map(_campaign_bytes, campaigns)))
    return entry


def _campaign_bytes(campaign: LiveCampaign) -> int:
    return (sys.getsizeof(campaign) + sys.getsizeof(campaign.id)
            + sys.getsizeof(campaign.starts_at) + sys.getsizeof(campaign.ends_at)
            + sys.getsizeof(campaign.accrual_bp) + campaign.narrowing.size)


_cache: BoundedCache[CompanyCampaigns] = BoundedCache(CAMPAIGN_CACHE_BYTES)


def live_campaigns(work: UnitOfWork, company_id: str, version: int, now: datetime,
                   since: datetime | None = None) -> CompanyCampaigns:
    """The company's active campaigns not yet ended at `since` (default: now): from the
    cache while `version` is the one they were read at and the entry reaches that far back,
    else their small columns again and the lists only of campaigns the company's previous
    entry did not hold. A sale made earlier and sent late (offline) asks for the campaigns
    that ran when it was made, some of which may have ended since."""
    if version == 0:  # no campaign was ever made
        return NO_CAMPAIGNS
    since = now if since is None else since
    cached = _cache.get(company_id, version)
    if cached is not None and cached.since <= since:
        return cached
    rows = work.run(_LIVE, {"company": company_id, "now": since}).all()
    previous = _cache.latest(company_id)
    narrowings = previous.narrowings if previous is not None else {}
    unread = [row.id for row in rows if row.id not in narrowings]
    if unread:
        narrowings = narrowings | {
            row.id: narrowing(row.skus, row.categories, row.store_ids)
            for row in work.run(_LISTS, {"company": company_id, "ids": unread})}
    entry = build(version, rows, narrowings, since)
    _cache.put(company_id, entry)
    return entry
