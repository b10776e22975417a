"""Customers: enrolment by Russian phone with the bonus account, the directory and search."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import and_, bindparam, false, func, insert, literal_column, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models import Customer, CustomerName, RewardAccount
from app.models.base import new_id
from app.services.cards import identifiers
from app.services.customers import otp, phones
from app.services.errors import Conflict, NotFound
from app.services.rewards import bonuses, ledger
from app.services.rewards.accounts import LARGEST_BALANCE, fresh, shown_balances
from app.services.tenancy import companies
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event
from app.wire import Balance, format_timestamp

CARD_NUMBER_TRIES = 5
# A name page walked in enrolment order reads at most this many customers per match before the
# matches themselves give the page (see _name_page).
WALK_PER_MATCH = 2
# How many customers, in enrolment order, an uncounted name search walks before it asks the
# name index instead.
WALK_UNCOUNTED = 20_000

# The directory's name search runs over "first last", lower-cased by the database, kept in
# CustomerName.full_name; migration 0008_customer_names fills it with this same expression.
FULL_NAME = func.lower(Customer.first_name + literal_column("' '")
                       + func.coalesce(Customer.last_name, literal_column("''")))

_ACCOUNT_JOIN = and_(RewardAccount.company_id == Customer.company_id,
                     RewardAccount.customer_id == Customer.id)
# The directory's order: enrolment, and the same instant by card number (the key of a name
# row, so every way of finding a page agrees).
_ENROLMENT_ORDER = (Customer.created_at, Customer.card_number)
_BY_PHONE = (select(Customer, RewardAccount).join(RewardAccount, _ACCOUNT_JOIN)
             .where(Customer.company_id == bindparam("company_id"), Customer.phone == bindparam("phone")))
_ID_BY_PHONE = select(Customer.id).where(Customer.company_id == bindparam("company_id"),
                                         Customer.phone == bindparam("phone"))


@dataclass(frozen=True)
class CustomerBalance:
    customer: Customer
    balance: Balance


def card_url(public_base_url: str, token: str) -> str:
    """The absolute address of the shopper's card page, on the configured public address (the
    request's Host header is the caller's to choose, and the link reaches shoppers)."""
    return public_base_url + "/cards/" + token


def customer_as_json(found: CustomerBalance, public_base_url: str) -> dict:
    """The customer as CustomerResponse shows it."""
    customer = found.customer
    return {"id": customer.id, "phone": customer.phone, "firstName": customer.first_name,
            "lastName": customer.last_name,
            "birthDate": customer.birth_date.isoformat() if customer.birth_date else None,
            "email": customer.email, "cardNumber": customer.card_number,
            "cardUrl": card_url(public_base_url, customer.card_token),
            "balance": found.balance.as_json(), "createdAt": format_timestamp(customer.created_at)}


def ensure_not_enrolled(session: Session, company_id: str, phone: str) -> None:
    """409 customer_exists (with the customer's id) when the phone is enrolled already."""
    existing = session.scalar(_ID_BY_PHONE, {"company_id": company_id, "phone": phone})
    if existing is not None:
        raise Conflict("a customer with this phone is enrolled already", code="customer_exists",
                       customerId=existing)


def enrol_customer(session: Session, company_id: str, *, phone: str, first_name: str,
                   last_name: str | None = None, birth_date: date | None = None,
                   email: str | None = None, enrollment_challenge_id: str | None = None,
                   public_base_url: str, now: datetime) -> CustomerBalance:
    """A customer with a loyalty card and a bonus account, in one transaction: empty, or with
    the program's welcome bonus (and the birthday bonus, enrolled on the birthday). When the
    program requires OTP (or a challenge is named anyway) a confirmed, unused ENROLLMENT
    challenge for the phone is spent. Emits customer.created, whose card link is on
    `public_base_url`, then reward.adjusted for each bonus."""
    ensure_not_enrolled(session, company_id, phone)
    program = companies.get_program(session, company_id)
    if program.enrollment_requires_otp or enrollment_challenge_id:
        otp.use_enrollment_challenge(session, company_id, enrollment_challenge_id, phone, now)
    for attempt in range(1, CARD_NUMBER_TRIES + 1):
        customer = Customer(company_id=company_id, id=new_id(), phone=phone, first_name=first_name,
                            last_name=last_name, birth_date=birth_date, email=email,
                            card_number=identifiers.new_card_number(), card_token=identifiers.new_card_token(),
                            created_at=now)
        try:
            # A savepoint: a clash on the phone (a concurrent enrolment) or on the card number
            # (one in 10^11) leaves the rest of the transaction usable.
            with session.begin_nested():
                session.add(customer)
                session.flush()
                record_names(session, company_id, [customer.id])
                work = UnitOfWork.of(session)
                account = ledger.open_account(
                    work, company_id, customer.id, now,
                    birthday_due_on=bonuses.next_birthday(birth_date, bonuses.today(now)))
                session.flush()
            adjusted = []  # each credit's event, with the balance that credit left
            if program.welcome_bonus:
                entry = ledger.post(account, type="BONUS", amount=program.welcome_bonus, now=now,
                                    basis=bonuses.WELCOME)
                adjusted.append(ledger.adjustment_as_json(entry, account))
            if bonuses.is_due(account.birthday_due_on, now):
                if program.birthday_bonus:
                    entry = ledger.post(account, type="BONUS", amount=program.birthday_bonus,
                                        now=now, basis=bonuses.BIRTHDAY)
                    adjusted.append(ledger.adjustment_as_json(entry, account))
                account.birthday_due_on = bonuses.after_credit(birth_date, now)
            created = CustomerBalance(customer, Balance.of(account))
            record_event(session, company_id, "customer.created",
                         customer_as_json(created, public_base_url))
            for data in adjusted:
                record_event(session, company_id, "reward.adjusted", data)
            return created
        except IntegrityError:
            ensure_not_enrolled(session, company_id, phone)
            if attempt == CARD_NUMBER_TRIES:
                raise


def record_names(session: Session, company_id: str, customer_ids: list[str] | None = None) -> int:
    """Write the directory's name row of each of these customers (flushed already); with no ids,
    of every customer of the company still without one (after a bulk load, or customers an
    older release enrolled during a rolling deploy). Whatever writes a customer calls it in the
    same transaction. Returns how many rows were written."""
    rows = select(Customer.company_id, Customer.card_number, Customer.created_at, FULL_NAME).where(
        Customer.company_id == company_id)
    if customer_ids is None:
        rows = rows.where(Customer.card_number.not_in(
            select(CustomerName.card_number).where(CustomerName.company_id == company_id)))
    elif customer_ids:
        rows = rows.where(Customer.id.in_(customer_ids))
    else:
        return 0
    return session.execute(insert(CustomerName).from_select(
        ["company_id", "card_number", "created_at", "full_name"], rows)).rowcount


def find_by_phone(session: Session, company_id: str, phone: str, now: datetime) -> CustomerBalance:
    row = session.execute(_BY_PHONE, {"company_id": company_id, "phone": phone}).first()
    if row is None:
        raise NotFound("customer")
    customer, account = row
    return CustomerBalance(customer, Balance.of(fresh(session, account, now)))


def directory(session: Session, company_id: str, *, query: str | None = None,
              minimum_available: int | None = None, offset: int = 0, limit: int = 20,
              now: datetime, counted: bool = True) -> tuple[list[CustomerBalance], int]:
    """One page of customers in enrolment order (the same instant: by card number), with
    balances, and how many match. `query` is a fragment of the phone's digits when it is
    written as a number, else a fragment of the name (case-insensitive). Not `counted`, a
    name fragment's number is the page's end, one more when more follow (the back office's
    search: counting a common fragment's matches costs more than finding its page)."""
    floor = None
    if minimum_available is not None:
        # Beyond the largest balance kept nobody qualifies (and the number fits no column).
        floor = (RewardAccount.available >= minimum_available
                 if minimum_available <= LARGEST_BALANCE else false())
    digits = phones.digits_fragment(query) if query else None
    if query and digits is None and floor is None and not counted:
        rows = _name_page_uncounted(session, company_id, _name_pattern(query), offset, limit + 1)
        total = offset + len(rows)
        rows = rows[:limit]
    elif query and digits is None and floor is None:
        rows, total = _name_page(session, company_id, _name_pattern(query), offset, limit)
    elif query:
        rows, total = _matching_page(session, company_id, _matches(company_id, query, digits, floor),
                                     offset, limit)
    else:
        accounts = [RewardAccount.company_id == company_id, *([] if floor is None else [floor])]
        rows = session.execute(
            select(Customer, RewardAccount).join(RewardAccount, _ACCOUNT_JOIN)
            .where(Customer.company_id == company_id, *accounts)
            .order_by(*_ENROLMENT_ORDER).offset(offset).limit(limit)).all()
        # One account per customer: count the narrower table.
        total = (offset + len(rows) if rows and len(rows) < limit else
                 session.scalar(select(func.count()).select_from(RewardAccount).where(*accounts)))
    shown = shown_balances(session, company_id, [account for _, account in rows], now)
    return [CustomerBalance(customer, shown.get(customer.id) or Balance.of(account))
            for customer, account in rows], total


def _name_pattern(query: str) -> str:
    return f"%{_escape_like(query.lower())}%"


def _name_page(session: Session, company_id: str, pattern: str, offset: int,
               limit: int) -> tuple[list, int]:
    """A name fragment's page and exact total. The total counts the matching name rows alone.
    A common fragment (a first name matches thousands) finds its page by walking customers in
    enrolment order, matching FULL_NAME of each (what its name row holds): a few hundred rows
    for the first pages. The walk stops at WALK_PER_MATCH rows per match, so where it falls
    short (a rare fragment, a deep page) it has cost less than reading the matches, which then
    give the page."""
    total = session.scalar(select(func.count()).select_from(
        _name_matches(company_id, pattern).subquery()))
    if offset >= total:
        return [], total
    walked = (select(Customer.card_number, Customer.created_at, FULL_NAME.label("full_name"))
              .where(Customer.company_id == company_id).order_by(*_ENROLMENT_ORDER)
              .limit(WALK_PER_MATCH * total).subquery("walked"))
    page = select(walked.c.card_number, walked.c.created_at).where(
        walked.c.full_name.like(pattern, escape="\\"))
    rows = _page_of(session, company_id, page, offset, limit)
    if len(rows) >= min(limit, total - offset):
        return rows, total
    return _matching_page(session, company_id, _name_matches(company_id, pattern), offset, limit)


def _name_page_uncounted(session: Session, company_id: str, pattern: str, offset: int,
                         limit: int) -> list:
    """A name fragment's page without its total: the walk in enrolment order over the first
    WALK_UNCOUNTED customers finds a common fragment's page; where it falls short (a rare
    fragment, a deep page) the matches themselves, few for a rare fragment, give it."""
    walked = (select(Customer.card_number, Customer.created_at, FULL_NAME.label("full_name"))
              .where(Customer.company_id == company_id).order_by(*_ENROLMENT_ORDER)
              .limit(WALK_UNCOUNTED).subquery("walked"))
    page = select(walked.c.card_number, walked.c.created_at).where(
        walked.c.full_name.like(pattern, escape="\\"))
    rows = _page_of(session, company_id, page, offset, limit)
    if len(rows) >= limit:
        return rows
    return _page_of(session, company_id, _name_matches(company_id, pattern), offset, limit)


def _name_matches(company_id: str, pattern: str):
    return select(CustomerName.card_number, CustomerName.created_at).where(
        CustomerName.company_id == company_id, CustomerName.full_name.like(pattern, escape="\\"))


def _matches(company_id: str, query: str, digits: str | None, floor):
    """(card_number, created_at) of the customers a text query matches: phone digits in the
    customers table, a name fragment in the narrow CustomerName table (both trigram-indexed on
    PostgreSQL)."""
    if digits is not None:
        found = select(Customer.card_number, Customer.created_at).where(
            Customer.company_id == company_id, Customer.phone.like(f"%{digits}%"))
    else:
        found = _name_matches(company_id, _name_pattern(query))
        if floor is not None:
            found = found.join(Customer, and_(Customer.company_id == CustomerName.company_id,
                                              Customer.card_number == CustomerName.card_number))
    if floor is not None:
        found = found.join(RewardAccount, _ACCOUNT_JOIN).where(floor)
    return found


def _matching_page(session: Session, company_id: str, matches, offset: int,
                   limit: int) -> tuple[list, int]:
    """A page of a text search and its total from one pass over the matches: the trigram index
    finds them once (materialised), the page and the count are both taken from that set."""
    matches = matches.cte("matches").prefix_with("MATERIALIZED", dialect="postgresql")
    total = select(func.count()).select_from(matches).scalar_subquery().label("total")
    found = _page_of(session, company_id, select(matches), offset, limit, total)
    if not found:  # past the end: no row carried the total
        return [], session.scalar(select(func.count()).select_from(matches))
    return [(customer, account) for customer, account, _ in found], found[0].total


def _page_of(session: Session, company_id: str, keys, offset: int, limit: int, *extra) -> list:
    """The customers and accounts of one page of `keys` (card_number, created_at), in
    enrolment order."""
    page = (keys.order_by(keys.selected_columns.created_at, keys.selected_columns.card_number)
            .offset(offset).limit(limit).subquery("page"))
    return session.execute(
        select(Customer, RewardAccount, *extra).select_from(page)
        .join(Customer, and_(Customer.company_id == company_id,
                             Customer.card_number == page.c.card_number))
        .join(RewardAccount, _ACCOUNT_JOIN).order_by(page.c.created_at, page.c.card_number)).all()


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
