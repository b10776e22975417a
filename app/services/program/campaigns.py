"""Campaigns (CONTRACT §15): create, list, change, delete. Every change moves the program's
`campaigns_version` in the same transaction, which is what tells the registers' caches to
read the campaigns again (app/services/program/matching.py)."""
from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.models import Campaign, Program, Store
from app.services.errors import InvalidField, NotFound
from app.services.wire import format_percent, format_timestamp


def campaign_as_json(campaign: Campaign) -> dict:
    """The campaign as CampaignResponse shows it."""
    return {"id": campaign.id, "name": campaign.name,
            "startsAt": format_timestamp(campaign.starts_at),
            "endsAt": format_timestamp(campaign.ends_at),
            "accrualPercent": format_percent(campaign.accrual_bp),
            "skus": json.loads(campaign.skus), "categories": json.loads(campaign.categories),
            "storeIds": json.loads(campaign.store_ids), "active": campaign.active,
            "createdAt": format_timestamp(campaign.created_at)}


def _moved(session: Session, company_id: str) -> None:
    session.execute(update(Program).where(Program.company_id == company_id)
                    .values(campaigns_version=Program.campaigns_version + 1))


def _check_stores(session: Session, company_id: str, store_ids: list[str]) -> None:
    known = set(session.scalars(select(Store.id).where(Store.company_id == company_id,
                                                       Store.id.in_(store_ids))))
    for position, store_id in enumerate(store_ids):
        if store_id not in known:
            raise InvalidField(["body", "storeIds", position], "no such store in the company",
                               "value_error")


def create_campaign(session: Session, company_id: str, *, name: str, starts_at: datetime,
                    ends_at: datetime, accrual_bp: int, skus: list[str], categories: list[str],
                    store_ids: list[str], now: datetime) -> Campaign:
    """The lists are kept without repeats, in their order; a store that is not the company's
    is named at its place in the list as given."""
    if store_ids:
        _check_stores(session, company_id, store_ids)
    skus, categories, store_ids = (list(dict.fromkeys(given))
                                   for given in (skus, categories, store_ids))
    campaign = Campaign(company_id=company_id, name=name, starts_at=starts_at, ends_at=ends_at,
                        accrual_bp=accrual_bp, skus=json.dumps(skus, ensure_ascii=False),
                        categories=json.dumps(categories, ensure_ascii=False),
                        store_ids=json.dumps(store_ids), active=True, created_at=now)
    session.add(campaign)
    _moved(session, company_id)
    session.flush()
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


def update_campaign(session: Session, company_id: str, campaign_id: str, *, name: str | None = None,
                    ends_at: datetime | None = None, active: bool | None = None) -> Campaign:
    campaign = get_campaign(session, company_id, campaign_id)
    if ends_at is not None and ends_at <= campaign.starts_at:
        raise InvalidField(["body", "endsAt"], "must be later than the campaign's startsAt",
                           "value_error")
    for field, value in (("name", name), ("ends_at", ends_at), ("active", active)):
        if value is not None:
            setattr(campaign, field, value)
    _moved(session, company_id)
    session.flush()
    return campaign


def delete_campaign(session: Session, company_id: str, campaign_id: str) -> None:
    """Kept, inactive: sales name it."""
    update_campaign(session, company_id, campaign_id, active=False)
