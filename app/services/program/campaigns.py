"""Campaigns (docs/api.md#tiers): create, list, change, delete. Every change moves the program's
`campaigns_version` in the same transaction, which is what tells the registers' caches to
read the campaigns again (app/services/program/matching.py)."""
from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.models import Campaign, Program, Store
from app.services.audit import events as audit
from app.services.errors import Conflict, InvalidField, NotFound
from app.wire import format_percent, format_timestamp


def campaign_as_json(campaign: Campaign) -> dict:
    """The campaign as CampaignResponse shows it."""
    return {"id": campaign.id, "name": campaign.name,
            "startsAt": format_timestamp(campaign.starts_at),
            "endsAt": format_timestamp(campaign.ends_at),
            "accrualPercent": format_percent(campaign.accrual_bp),
            "skus": json.loads(campaign.skus), "categories": json.loads(campaign.categories),
            "storeIds": json.loads(campaign.store_ids), "active": campaign.active,
            "createdAt": format_timestamp(campaign.created_at)}


MOST_LIVE = 100  # live campaigns of a company: active and not ended (docs/api.md#tiers)


def _moved(session: Session, company_id: str) -> None:
    """Move the version the registers' caches go by. It is the program row's lock too: every
    change to the company's campaigns waits here for the one before it to commit."""
    session.execute(update(Program).where(Program.company_id == company_id)
                    .values(campaigns_version=Program.campaigns_version + 1))


def _take_live_slot(session: Session, company_id: str, now: datetime,
                    besides: str | None = None) -> None:
    """Refuse one more live campaign beyond MOST_LIVE. Called after `_moved`, so the count is
    made under the program row's lock and sees what the change before it left: two creates at
    99 live cannot both pass (READ COMMITTED reads each statement afresh)."""
    live = select(func.count()).select_from(Campaign).where(
        Campaign.company_id == company_id, Campaign.active.is_(True), Campaign.ends_at > now)
    if besides is not None:
        live = live.where(Campaign.id != besides)
    if session.scalar(live) >= MOST_LIVE:
        raise Conflict(f"the company has {MOST_LIVE} live campaigns (active and not ended); "
                       "end or pause one first", code="campaign_limit_reached")


def _check_stores(session: Session, company_id: str, store_ids: list[str]) -> None:
    known = set(session.scalars(select(Store.id).where(Store.company_id == company_id,
                                                       Store.id.in_(store_ids))))
    for position, store_id in enumerate(store_ids):
        if store_id not in known:
            raise InvalidField(["body", "storeIds", position], "no such store in the company",
                               "value_error")


def create_campaign(session: Session, company_id: str, *, name: str, starts_at: datetime,
                    ends_at: datetime, accrual_bp: int, skus: list[str], categories: list[str],
                    store_ids: list[str], now: datetime, actor: audit.Actor | None = None) -> Campaign:
    """The lists are kept without repeats, in their order; a store that is not the company's
    is named at its place in the list as given."""
    if store_ids:
        _check_stores(session, company_id, store_ids)
    _moved(session, company_id)
    if ends_at > now:
        _take_live_slot(session, company_id, now)
    skus, categories, store_ids = (list(dict.fromkeys(given))
                                   for given in (skus, categories, store_ids))
    campaign = Campaign(company_id=company_id, name=name, starts_at=starts_at, ends_at=ends_at,
                        accrual_bp=accrual_bp, skus=json.dumps(skus, ensure_ascii=False),
                        categories=json.dumps(categories, ensure_ascii=False),
                        store_ids=json.dumps(store_ids), active=True, created_at=now)
    session.add(campaign)
    session.flush()
    audit.record(session, company_id, actor, "campaign.created", "campaign", campaign.id, at=now)
    return campaign


def get_campaign(session: Session, company_id: str, campaign_id: str) -> Campaign:
    campaign = session.scalar(select(Campaign).where(Campaign.company_id == company_id,
                                                     Campaign.id == campaign_id))
    if campaign is None:
        raise NotFound("campaign")
    return campaign


def list_campaigns(session: Session, company_id: str, *, page: int, page_size: int) -> dict:
    """Newest first, deleted (inactive) ones too."""
    total = session.scalar(select(func.count()).select_from(Campaign)
                           .where(Campaign.company_id == company_id)) or 0
    offset = (page - 1) * page_size
    items = list(session.scalars(
        select(Campaign).where(Campaign.company_id == company_id)
        .order_by(Campaign.created_at.desc(), Campaign.id.desc())
        .offset(offset).limit(page_size))) if offset < total else []
    return {"items": [campaign_as_json(item) for item in items], "page": page,
            "pageSize": page_size, "total": total}


def _is_live(active: bool, ends_at: datetime, now: datetime) -> bool:
    return active and ends_at > now


def update_campaign(session: Session, company_id: str, campaign_id: str, *, now: datetime,
                    name: str | None = None, ends_at: datetime | None = None,
                    active: bool | None = None, actor: audit.Actor | None = None,
                    action: str = "campaign.updated") -> Campaign:
    """A change that makes the campaign live again (resumed, or an ended one given a later
    end) takes a live slot as a new campaign does. The campaign is read under the program
    row's lock, so what it was is what the change before this one left."""
    _moved(session, company_id)
    campaign = get_campaign(session, company_id, campaign_id)
    if ends_at is not None and ends_at <= campaign.starts_at:
        raise InvalidField(["body", "endsAt"], "must be later than the campaign's startsAt",
                           "value_error")
    was_live = _is_live(campaign.active, campaign.ends_at, now)
    if not was_live and _is_live(campaign.active if active is None else active,
                                 campaign.ends_at if ends_at is None else ends_at, now):
        _take_live_slot(session, company_id, now, besides=campaign.id)
    for field, value in (("name", name), ("ends_at", ends_at), ("active", active)):
        if value is not None:
            setattr(campaign, field, value)
    session.flush()
    audit.record(session, company_id, actor, action, "campaign", campaign.id, at=now)
    return campaign


def delete_campaign(session: Session, company_id: str, campaign_id: str, *,
                    now: datetime, actor: audit.Actor | None = None) -> None:
    """Kept, inactive: sales name it."""
    update_campaign(session, company_id, campaign_id, now=now, active=False, actor=actor,
                    action="campaign.ended")
