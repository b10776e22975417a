"""Welcome and birthday bonuses (docs/api.md#tiers): when they are due. They are credited by the
ledger (`ledger.credit_bonus`) as BONUS entries, the way a positive adjustment is."""
from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from app.models import Customer, Program, RewardAccount

# Birthdays are days in Moscow, whatever the store's or the server's zone.
BIRTHDAY_ZONE = ZoneInfo("Europe/Moscow")
WELCOME, BIRTHDAY = "welcome", "birthday"

# Read only on the day a birthday is due: once a year per customer.
BIRTHDAY_OF = (select(Program.birthday_bonus, Customer.birth_date)
               .join(Customer, Customer.company_id == Program.company_id)
               .where(Program.company_id == bindparam("company_id"),
                      Customer.id == bindparam("customer_id")))


def today(now: datetime) -> date:
    return now.astimezone(BIRTHDAY_ZONE).date()


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def birthday_in(year: int, birth: date) -> date:
    """The birthday in `year`; 29 February is the 28th in other years."""
    if birth.month == 2 and birth.day == 29 and not _leap(year):
        return date(year, 2, 28)
    return date(year, birth.month, birth.day)


def next_birthday(birth: date | None, on_or_after: date) -> date | None:
    """The first birthday on or after the day given (None without a birth date)."""
    if birth is None:
        return None
    this_year = birthday_in(on_or_after.year, birth)
    return this_year if this_year >= on_or_after else birthday_in(on_or_after.year + 1, birth)


def is_due(due_on: date | None, now: datetime) -> bool:
    return due_on is not None and due_on <= today(now)


def after_credit(birth: date, now: datetime) -> date:
    """Once this year's bonus is credited, the next is next year's."""
    return next_birthday(birth, today(now) + timedelta(days=1))


def accounts_due(session: Session, now: datetime, limit: int) -> list[tuple[str, str]]:
    """(company_id, customer_id) of accounts whose birthday bonus is due, for the periodic job."""
    return [(company_id, customer_id) for company_id, customer_id in session.execute(
        select(RewardAccount.company_id, RewardAccount.customer_id)
        .where(RewardAccount.birthday_due_on <= today(now)).limit(limit))]
