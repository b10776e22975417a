"""The shopper's own loyalty card, reached by its unguessable token alone: what the card
page and the Apple Wallet pass show."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from app.models import Company, Customer, Program, RewardAccount, Store
from app.services.cards import passkit, wallet_pass
from app.services.cards.identifiers import CARD_TOKEN_BYTES
from app.services.errors import NotFound
from app.services.rewards import ledger
from app.services.rewards import tiers as tier_rules
from app.services.unit_of_work import UnitOfWork
from app.wire import format_amount

# token_urlsafe(32) gives 43 characters; anything else is not a token we made.
CARD_TOKEN_LENGTH = -(-CARD_TOKEN_BYTES * 4 // 3)
PAGE_STORE_LIMIT = 100
DEFAULT_TIMEZONE = "Europe/Moscow"


@dataclass(frozen=True)
class LoyaltyCard:
    customer: Customer
    company: Company
    account: RewardAccount


def _published(company_id):
    # channels is a space-separated set; pad it so "MINIAPP" matches only as a whole word.
    return (Store.company_id == company_id, Store.active.is_(True),
            (" " + Store.channels + " ").contains(" MINIAPP "))


_CARD = (select(Customer, Company, RewardAccount)
         .join(Company, Company.id == Customer.company_id)
         .join(RewardAccount, (RewardAccount.company_id == Customer.company_id)
               & (RewardAccount.customer_id == Customer.id))
         .where(Customer.card_token == bindparam("token")))
_STORES = (select(Store).where(*_published(bindparam("company_id")))
           .order_by(Store.name, Store.id).limit(bindparam("limit")))
_STORES_BY_CITY = (select(Store).where(*_published(bindparam("company_id")))
                   .order_by(Store.city, Store.name, Store.id).limit(bindparam("limit")))
_STORE_COUNT = select(func.count()).select_from(Store).where(*_published(bindparam("company_id")))
_PASS_PROGRAM = select(Program.tiers, Program.tiers_changed_at).where(
    Program.company_id == bindparam("company_id"))


@dataclass(frozen=True)
class PassStanding:
    tier_name: str | None
    changed_at: datetime  # the pass's Last-Modified and update tag (app.services.cards.passkit)


def card_by_token(session: Session, token: str, now: datetime) -> LoyaltyCard:
    """The card a token opens, or NotFound, which says nothing about why."""
    if not isinstance(token, str) or len(token) != CARD_TOKEN_LENGTH:
        raise NotFound("card")
    row = session.execute(_CARD, {"token": token}).first()
    if row is None:
        raise NotFound("card")
    customer, company, account = row
    if ledger.comes_due(account, now):
        # Something has matured, expired (or a birthday come) since the last touch: show it
        # as the register would.
        account = ledger.lock(UnitOfWork.of(session), company.id, customer.id, now)
    return LoyaltyCard(customer=customer, company=company, account=account)


def published_stores(session: Session, company_id: str, limit: int = PAGE_STORE_LIMIT
                     ) -> tuple[list[Store], int]:
    """The company's active stores published to MINIAPP, by city and name, and their count."""
    stores = list(session.scalars(_STORES_BY_CITY, {"company_id": company_id, "limit": limit}))
    total = len(stores) if len(stores) < limit else session.scalar(
        _STORE_COUNT, {"company_id": company_id})
    return stores, total


def stores_by_city(stores: list[Store]) -> list[tuple[str, list[Store]]]:
    cities: dict[str, list[Store]] = {}
    for store in stores:
        cities.setdefault(store.city, []).append(store)
    return list(cities.items())


def wallet_locations(session: Session, company_id: str) -> list[dict]:
    """The pass's geotags: the first ten published active stores by name."""
    stores = session.scalars(_STORES, {"company_id": company_id,
                                       "limit": wallet_pass.MAX_LOCATIONS})
    return [{"latitude": store.latitude, "longitude": store.longitude,
             "relevantText": f"{store.name} is nearby: your card is ready"} for store in stores]


def pending_arrival(account: RewardAccount, stores: list[Store]) -> date | None:
    """The day the next pending bonuses become available, in the shops' time zone."""
    if not account.pending or account.next_maturity_at is None:
        return None
    zone = ZoneInfo(stores[0].timezone if stores else DEFAULT_TIMEZONE)
    return account.next_maturity_at.astimezone(zone).date()


def display_amount(kopecks: int) -> str:
    """"1 234.50": digits grouped by no-break spaces, for people rather than programs."""
    text = format_amount(kopecks)
    sign = "-" if text.startswith("-") else ""
    whole, _, fraction = text.lstrip("-").partition(".")
    groups = []
    while whole:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    return f"{sign}{chr(0xA0).join(groups)}.{fraction}"


def pass_standing(session: Session, card: LoyaltyCard) -> PassStanding:
    """The tier the pass shows (by the account's spend as last counted: a recount writes the
    account, and so changes the pass) and when what the pass shows last changed."""
    stored, tiers_changed_at = session.execute(_PASS_PROGRAM, {"company_id": card.company.id}).one()
    tier = tier_rules.tier_of(tier_rules.from_stored(stored or "[]"), card.account.spend)
    return PassStanding(tier.name if tier else None,
                        passkit.pass_changed_at(card.account.updated_at, tiers_changed_at))


def member_name(customer: Customer) -> str:
    return " ".join(part for part in (customer.first_name, customer.last_name) if part)


def build_wallet_pass(session: Session, card: LoyaltyCard, signer: wallet_pass.PassSigner, *,
                      public_base_url: str, pepper: str, now: datetime,
                      standing: PassStanding | None = None) -> bytes:
    """The signed pass, asking `public_base_url`/passkit for its updates; its first download
    records it (the digest of its token)."""
    account = card.account
    token = passkit.issue_pass(session, card.company.id, card.customer.id, pepper=pepper, now=now)
    return wallet_pass.build_pass(
        signer,
        serial_number=card.customer.id,
        organization_name=card.company.name,
        description=f"{card.company.name} loyalty card",
        card_number=card.customer.card_number,
        balance_text=display_amount(account.available),
        pending_text=display_amount(account.pending) if account.pending else None,
        locations=wallet_locations(session, card.company.id),
        relevant_text=None,
        web_service=wallet_pass.WebService(url=f"{public_base_url}/passkit",
                                           authentication_token=token),
        member_name=member_name(card.customer),
        tier_name=(standing or pass_standing(session, card)).tier_name,
    )
