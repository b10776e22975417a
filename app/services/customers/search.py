"""The back office's one search box: a phone (any way a phone is accepted), a card number, or
else a fragment of the name or of the phone's digits, each found by an index."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.models import Customer, RewardAccount
from app.services.cards.identifiers import is_valid_ean13
from app.services.customers import phones, profiles
from app.services.errors import NotFound
from app.services.rewards.accounts import fresh
from app.wire import Balance

LONGEST_QUERY = 100


def find_customers(session: Session, company_id: str, text: str, *, offset: int, limit: int,
                   now: datetime) -> tuple[list[profiles.CustomerBalance], int]:
    """The customers the text names, in enrolment order, and the page's end (one more when
    more follow: a name fragment's matches are not counted)."""
    text = text.strip()[:LONGEST_QUERY]
    if not text:
        return [], 0
    compact = "".join(text.split())
    if is_valid_ean13(compact):
        found = _by_card_number(session, company_id, compact, now)
        if found is not None:
            return [found], 1
    try:
        phone = phones.normalise_phone(text)
    except phones.InvalidPhone:
        phone = None
    if phone is not None:
        try:
            return [profiles.find_by_phone(session, company_id, phone, now)], 1
        except NotFound:
            pass
    return profiles.directory(session, company_id, query=text, offset=offset, limit=limit,
                              now=now, counted=False)


def _by_card_number(session: Session, company_id: str, card_number: str,
                    now: datetime) -> profiles.CustomerBalance | None:
    row = session.execute(
        select(Customer, RewardAccount)
        .join(RewardAccount, (RewardAccount.company_id == Customer.company_id)
              & (RewardAccount.customer_id == Customer.id))
        .where(Customer.company_id == company_id, Customer.card_number == card_number)).first()
    if row is None:
        return None
    return profiles.CustomerBalance(row[0], Balance.of(fresh(session, row[1], now)))


def customer_of(session: Session, company_id: str, customer_id: str) -> Customer:
    customer = session.get(Customer, (company_id, customer_id))
    if customer is None:
        raise NotFound("customer")
    return customer
