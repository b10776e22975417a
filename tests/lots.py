"""Arranging time for points that expire (docs/api.md#expiry): tests move a customer's lots
nearer to their end instead of waiting."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from app.models import RewardAccount, RewardLot


def age_lots(session, company_id: str, customer_id: str, by: timedelta) -> None:
    """As if `by` had passed: the customer's lots expire and remind that much sooner.
    Commits."""
    for lot in session.scalars(select(RewardLot).where(RewardLot.company_id == company_id,
                                                       RewardLot.customer_id == customer_id)):
        lot.expires_at = lot.expires_at and lot.expires_at - by
        lot.remind_at = lot.remind_at and lot.remind_at - by
    account = session.scalar(select(RewardAccount).where(RewardAccount.company_id == company_id,
                                                         RewardAccount.customer_id == customer_id))
    account.next_expiry_at = account.next_expiry_at and account.next_expiry_at - by
    account.next_reminder_at = account.next_reminder_at and account.next_reminder_at - by
    session.commit()


def lots_of(session, company_id: str, customer_id: str) -> list[tuple]:
    """(amount, remaining, expires_at) of the customer's lots, oldest first."""
    return [tuple(row) for row in session.execute(
        select(RewardLot.amount, RewardLot.remaining, RewardLot.expires_at)
        .where(RewardLot.company_id == company_id, RewardLot.customer_id == customer_id)
        .order_by(RewardLot.created_at, RewardLot.id))]
