"""Which campaign gives a quote line its accrual percent (CONTRACT §15).

The register reads its company's campaigns from a cache in the process, never from the
database on each quote: the program's `campaigns_version` comes with the session's context
(statements.CONTEXT, no extra round trip) and every change to a campaign moves it in the same
transaction, so a cached list is used only while it is the latest committed one.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, select, true

from app.models import Campaign
from app.services.unit_of_work import UnitOfWork

_CAMPAIGNS = Campaign.__table__
# Largest percent first, then the older campaign: the first that matches a line gives it.
_LIVE = (select(_CAMPAIGNS.c.id, _CAMPAIGNS.c.starts_at, _CAMPAIGNS.c.ends_at,
                _CAMPAIGNS.c.accrual_bp, _CAMPAIGNS.c.skus, _CAMPAIGNS.c.categories,
                _CAMPAIGNS.c.store_ids)
         .where(_CAMPAIGNS.c.company_id == bindparam("company"), _CAMPAIGNS.c.active == true(),
                _CAMPAIGNS.c.ends_at > bindparam("now"))
         .order_by(_CAMPAIGNS.c.accrual_bp.desc(), _CAMPAIGNS.c.created_at, _CAMPAIGNS.c.id))
_MOST_COMPANIES = 10_000  # cached in one process; beyond it the cache starts again


@dataclass(frozen=True)
class LiveCampaign:
    id: str
    starts_at: datetime
    ends_at: datetime
    accrual_bp: int
    skus: frozenset
    categories: frozenset
    store_ids: frozenset

    def runs_at(self, store_id: str | None, now: datetime) -> bool:
        return (self.starts_at <= now < self.ends_at
                and (not self.store_ids or store_id in self.store_ids))

    def covers(self, sku: str | None, category: str | None) -> bool:
        if not self.skus and not self.categories:
            return True
        return sku in self.skus or category in self.categories


_cache: dict[str, tuple[int, tuple[LiveCampaign, ...]]] = {}


def live_campaigns(work: UnitOfWork, company_id: str, version: int,
                   now: datetime) -> tuple[LiveCampaign, ...]:
    """The company's active campaigns not yet ended: from the cache while `version` is the
    one it was loaded at, else read again."""
    if version == 0:  # no campaign was ever made
        return ()
    cached = _cache.get(company_id)
    if cached is not None and cached[0] == version:
        return cached[1]
    campaigns = tuple(
        LiveCampaign(row.id, row.starts_at, row.ends_at, row.accrual_bp,
                     frozenset(json.loads(row.skus)), frozenset(json.loads(row.categories)),
                     frozenset(json.loads(row.store_ids)))
        for row in work.run(_LIVE, {"company": company_id, "now": now}))
    if len(_cache) >= _MOST_COMPANIES:
        _cache.clear()
    _cache[company_id] = (version, campaigns)
    return campaigns


def running(campaigns: tuple[LiveCampaign, ...], store_id: str | None,
            now: datetime) -> list[LiveCampaign]:
    """Those that apply to a quote made now at the store."""
    return [campaign for campaign in campaigns if campaign.runs_at(store_id, now)]


def best_for_line(campaigns: list[LiveCampaign], sku: str | None,
                  category: str | None) -> LiveCampaign | None:
    """The applying campaign with the largest percent (campaigns do not add up)."""
    for campaign in campaigns:
        if campaign.covers(sku, category):
            return campaign
    return None
