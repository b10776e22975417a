"""The tier's spend (CONTRACT §15), kept on the reward account rather than summed from the
customer's sales on every quote.

A committed sale adds its spend, a return takes back what it removes from a sale still in the
window; the account remembers the oldest sale it counts, and once that sale leaves the window
(`is_stale`) the spend is recomputed from the sales still in it: on the next touch that needs
it (quote, commit, return, reading the account) or by the periodic job. `flask ledger verify`
recomputes it from the sale lines (app/services/rewards/verification.py).
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.orm import Session

from app.models import Program, RewardAccount, Sale
from app.services.rewards import tiers as tier_rules
from app.services.rewards.account import Account
from app.services.unit_of_work import UnitOfWork
from app.services.webhooks.outbox import record_event

_SALES = Sale.__table__
_OF_CUSTOMER = (_SALES.c.company_id == bindparam("company_id"),
                _SALES.c.customer_id == bindparam("customer_id"))
_IN_WINDOW = select(func.coalesce(func.sum(_SALES.c.spend), 0), func.min(_SALES.c.committed_at)).where(
    *_OF_CUSTOMER, _SALES.c.committed_at > bindparam("since"))
_ALL_TIME = select(func.coalesce(func.sum(_SALES.c.spend), 0), func.min(_SALES.c.committed_at)).where(
    *_OF_CUSTOMER)
_WINDOW = select(Program.tier_window_days).where(Program.company_id == bindparam("company_id"))


def is_stale(oldest_at: datetime | None, window_days: int | None, now: datetime) -> bool:
    """The oldest sale the spend counts has left the window."""
    since = tier_rules.window_start(now, window_days)
    return since is not None and oldest_at is not None and oldest_at <= since


def refresh(work: UnitOfWork, account: Account, window_days: int | None, now: datetime) -> None:
    """Recompute the spend from the sales in the window, if a counted sale has left it.

    `window_days` was read before the account was locked; a change of the window that
    committed meanwhile recomputed this account under its lock, so the window is read again
    (the lock is held now) before the spend is recomputed over it."""
    if not is_stale(account.spend_oldest_at, window_days, now):
        return
    window_days = work.run(_WINDOW, {"company_id": account.company_id}).scalar()
    if not is_stale(account.spend_oldest_at, window_days, now):
        return
    since = tier_rules.window_start(now, window_days)
    key = {"company_id": account.company_id, "customer_id": account.customer_id}
    if since is None:
        total, oldest = work.run(_ALL_TIME, key).one()
    else:
        total, oldest = work.run(_IN_WINDOW, {**key, "since": since}).one()
    account.spend, account.spend_oldest_at = int(total), oldest  # int(): numeric on PostgreSQL
    account.updated_at = now


def refresh_noticed(work: UnitOfWork, account: Account, window_days: int | None,
                    tiers: tuple[tier_rules.Tier, ...], now: datetime) -> None:
    """`refresh`, and `customer.tier_changed` if old sales leaving moved the customer down."""
    before = account.spend
    refresh(work, account, window_days, now)
    notice_move(work.session, account, tiers, before)


def add_sale(account: Account, spend: int, committed_at: datetime) -> None:
    account.spend += spend
    if account.spend_oldest_at is None or committed_at < account.spend_oldest_at:
        account.spend_oldest_at = committed_at


def notice_move(session: Session, account: Account, tiers: tuple[tier_rules.Tier, ...],
                spend_before: int) -> None:
    """`customer.tier_changed` when the spend moved the customer to another tier."""
    was = tier_rules.tier_of(tiers, spend_before)
    now_in = tier_rules.tier_of(tiers, account.spend)
    if was != now_in:
        record_event(session, account.company_id, "customer.tier_changed", {
            "customerId": account.customer_id, "from": was.name if was else None,
            "to": now_in.name if now_in else None})


def programs_with_window(session: Session) -> list[tuple[str, int, str]]:
    """(company_id, tier_window_days, tiers) of every program whose sales leave a window."""
    return list(session.execute(select(Program.company_id, Program.tier_window_days, Program.tiers)
                                .where(Program.tier_window_days.is_not(None))))


def stale_accounts(session: Session, company_id: str, window_days: int, now: datetime,
                   limit: int) -> list[str]:
    """Customers of the company whose oldest counted sale has left the window."""
    since = tier_rules.window_start(now, window_days)
    return list(session.scalars(select(RewardAccount.customer_id).where(
        RewardAccount.company_id == company_id, RewardAccount.spend_oldest_at <= since).limit(limit)))


def recompute_company(session: Session, company_id: str, window_days: int | None,
                      now: datetime) -> None:
    """Every account's spend over a new window, in one statement (a program change). The
    company's accounts are locked first: a commit locks its account before it writes its sale,
    so none can slip in between the sums read and the spends written. They are locked by
    customer, the order in which the periodic jobs lock a batch, so neither can hold what the
    other waits for."""
    accounts = RewardAccount.__table__
    session.execute(select(func.count()).select_from(
        select(accounts.c.customer_id).where(accounts.c.company_id == company_id)
        .order_by(accounts.c.customer_id).with_for_update().subquery()))
    counted = [_SALES.c.company_id == accounts.c.company_id,
               _SALES.c.customer_id == accounts.c.customer_id]
    since = tier_rules.window_start(now, window_days)
    if since is not None:
        counted.append(_SALES.c.committed_at > since)
    session.execute(update(accounts).where(accounts.c.company_id == company_id).values(
        spend=select(func.coalesce(func.sum(_SALES.c.spend), 0)).where(*counted).scalar_subquery(),
        spend_oldest_at=select(func.min(_SALES.c.committed_at)).where(*counted).scalar_subquery()))
