"""The tier's spend (docs/api.md#tiers), kept on the reward account rather than summed from the
customer's sales on every quote.

A committed sale adds its spend, a return takes back what it removes from a sale the spend
counts; the account remembers the oldest sale it counts, and once that sale leaves the window
(`is_stale`) the spend is recomputed from the sales still in it: on the next touch that needs
it (quote, commit, return, reading the account) or by the periodic job. A change of the
window moves the program's `tier_window_version` and nothing else, so the back office never
locks a company's accounts: an account counted for an older version (`needs_refresh`) is
recomputed over the new window the same way, on its next touch or by the job. The window and
its version come with the account's lock, from one snapshot. `flask ledger verify` recomputes
the spend from the sale lines (app/services/rewards/verification.py).
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, func, or_, select
from sqlalchemy.orm import Session

from app.models import Program, RewardAccount, Sale
from app.services.rewards import bounds
from app.services.rewards import tiers as tier_rules
from app.services.rewards.locked_account import Account
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event

_SALES = Sale.__table__
_OF_CUSTOMER = (_SALES.c.company_id == bindparam("company_id"),
                _SALES.c.customer_id == bindparam("customer_id"))
_IN_WINDOW = select(bounds.exact_sum(_SALES.c.spend), func.min(_SALES.c.committed_at)).where(
    *_OF_CUSTOMER, _SALES.c.committed_at > bindparam("since"))
_ALL_TIME = select(bounds.exact_sum(_SALES.c.spend), func.min(_SALES.c.committed_at)).where(
    *_OF_CUSTOMER)


def counted(spend: int) -> int:
    """The spend as the account keeps it: up to the ceiling (bounds.SPEND_CEILING)."""
    return min(spend, bounds.SPEND_CEILING)


def is_stale(oldest_at: datetime | None, window_days: int | None, now: datetime) -> bool:
    """The oldest sale the spend counts has left the window."""
    since = tier_rules.window_start(now, window_days)
    return since is not None and oldest_at is not None and oldest_at <= since


def needs_refresh(account, program, now: datetime) -> bool:
    """The spend is to be recomputed: counted over an older window (`account`'s
    spend_window_version behind `program`'s tier_window_version), or its oldest sale has
    left the window. Both take any object with those attributes: a context row, an
    Account, the ORM's."""
    return (account.spend_window_version != program.tier_window_version
            or is_stale(account.spend_oldest_at, program.tier_window_days, now))


def refresh(work: UnitOfWork, account: Account, now: datetime) -> None:
    """Recompute the spend over the window in force when the account was locked, if
    `needs_refresh`."""
    if needs_refresh(account, account, now):
        recount(work, account, now)


def recount(work: UnitOfWork, account: Account, now: datetime) -> None:
    """The spend summed again from the sales over the window in force."""
    since = tier_rules.window_start(now, account.tier_window_days)
    key = {"company_id": account.company_id, "customer_id": account.customer_id}
    if since is None:
        total, oldest = work.run(_ALL_TIME, key).one()
    else:
        total, oldest = work.run(_IN_WINDOW, {**key, "since": since}).one()
    # int(): numeric on PostgreSQL, a float on SQLite past 64 bits (then past the ceiling)
    account.spend, account.spend_oldest_at = counted(int(total)), oldest
    account.spend_window_version = account.tier_window_version
    account.updated_at = now


def refresh_noticed(work: UnitOfWork, account: Account, tiers: tuple[tier_rules.Tier, ...],
                    now: datetime) -> None:
    """`refresh`, and `customer.tier_changed` if old sales leaving moved the customer."""
    notice_move(work.session, account, tiers, refresh_for_notice(work, account, now))


def refresh_for_notice(work: UnitOfWork, account: Account, now: datetime) -> int:
    """`refresh`; returns the spend a notice of a move compares with: the one before the
    recount when old sales leaving moved it, the recounted one when a new window did. That is
    the program's change, not the customer's, and is not noticed (nor is a change of the tier
    list)."""
    before, own = account.spend, account.spend_window_version == account.tier_window_version
    refresh(work, account, now)
    return before if own else account.spend


def add_sale(account: Account, spend: int, committed_at: datetime) -> None:
    account.spend = counted(account.spend + spend)
    if account.spend_oldest_at is None or committed_at < account.spend_oldest_at:
        account.spend_oldest_at = committed_at


def take_back(work: UnitOfWork, account: Account, change: int, now: datetime) -> None:
    """A return changed a counted sale's spend by `change` (≤ 0); at the ceiling, what the
    spend is below it is not known without a recount."""
    if account.spend >= bounds.SPEND_CEILING:
        recount(work, account, now)
    else:
        account.spend += change
    account.updated_at = now


def notice_move(session: Session, account: Account, tiers: tuple[tier_rules.Tier, ...],
                spend_before: int) -> None:
    """`customer.tier_changed` when the spend moved the customer to another tier."""
    was = tier_rules.tier_of(tiers, spend_before)
    now_in = tier_rules.tier_of(tiers, account.spend)
    if was != now_in:
        record_event(session, account.company_id, "customer.tier_changed", {
            "customerId": account.customer_id, "from": was.name if was else None,
            "to": now_in.name if now_in else None})


def programs(session: Session) -> list:
    """(company_id, tier_window_days, tier_window_version, tiers) of every program."""
    return list(session.execute(select(Program.company_id, Program.tier_window_days,
                                       Program.tier_window_version, Program.tiers)))


def stale_accounts(session: Session, program, now: datetime, limit: int) -> list[str]:
    """Customers of the program's company whose spend needs a recount: counted over an older
    window, or their oldest counted sale has left it (each along its index)."""
    since = tier_rules.window_start(now, program.tier_window_days)
    stale = [RewardAccount.spend_window_version < program.tier_window_version]
    if since is not None:
        stale.append(RewardAccount.spend_oldest_at <= since)
    return list(session.scalars(select(RewardAccount.customer_id).where(
        RewardAccount.company_id == program.company_id, or_(*stale)).limit(limit)))
