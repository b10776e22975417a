"""`flask ledger verify`: every account recomputed from its entries and holds, and its lots
checked against its entries (docs/api.md#expiry), in the database."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import Session

from app.models import (Company, Hold, LedgerEntry, Program, RewardAccount, RewardLot, Sale,
                        SaleLine)
from app.services.rewards import bounds, lots, tiers
from app.services.rewards import spend as spend_rules


@dataclass(frozen=True)
class Difference:
    company_id: str
    customer_id: str
    field: str
    stored: int
    computed: int

    def __str__(self) -> str:
        return (f"{self.company_id} {self.customer_id} {self.field}: stored {self.stored}, "
                f"computed {self.computed}")


# Accounts per query: a million is ten queries, each a few seconds, between which an
# operator sees how far it got.
VERIFY_BATCH = 100_000


def verify(session: Session, company_id: str | None = None, *, batch: int = VERIFY_BATCH,
           progress: Callable[[int], None] | None = None) -> list[Difference]:
    """Recompute every account from its entries and holds; list what disagrees. Set-based
    queries over ranges of at most `batch` accounts of one company, so it runs in the
    database even over millions of accounts; `progress` hears how many accounts are done
    after each query."""
    companies = [company_id] if company_id is not None else session.scalars(
        select(Company.id).order_by(Company.id)).all()
    differences, done = [], 0
    for company in companies:
        after = None
        while True:
            upto, size = _range(session, company, after, batch)
            if size:
                differences += _differences(session, company, after, upto)
                done += size
                if progress is not None:
                    progress(done)
            if upto is None:
                break
            after = upto
    return differences


def _in_range(query, table, company_id: str, after: str | None, upto: str | None):
    """One company's accounts after `after` up to `upto` (customer ids). Bounds on the plain
    columns, not on the (company, customer) pair: PostgreSQL estimates a bound on a pair from
    its first column alone, took a range of one company for a single row and joined the
    sums by nested loops, which never finished at a million accounts."""
    query = query.where(table.company_id == company_id)
    if after is not None:
        query = query.where(table.customer_id > after)
    if upto is not None:
        query = query.where(table.customer_id <= upto)
    return query


def _range(session: Session, company_id: str, after: str | None,
           batch: int) -> tuple[str | None, int]:
    """The last customer of the company's next `batch` accounts and how many there are;
    None for the last when the range runs to the company's end."""
    accounts = _in_range(select(RewardAccount.customer_id), RewardAccount, company_id, after, None)
    upto = session.scalar(accounts.order_by(RewardAccount.customer_id).offset(batch - 1).limit(1))
    if upto is not None:
        return upto, batch
    return None, session.scalar(select(func.count()).select_from(accounts.subquery()))


def _differences(session: Session, company_id: str, after: str | None,
                 upto: str | None) -> list[Difference]:
    def of_status(status):
        # Credits and debits summed may pass 64 bits on the way (bounds.exact_sum).
        return bounds.exact_sum(case((LedgerEntry.status == status, LedgerEntry.amount), else_=0))

    entries = select(
        LedgerEntry.company_id, LedgerEntry.customer_id,
        of_status("ACTIVE").label("active"), of_status("PENDING").label("pending"),
    ).group_by(LedgerEntry.company_id, LedgerEntry.customer_id)
    holds = (select(Hold.company_id, Hold.customer_id, func.sum(Hold.amount).label("reserved"))
             .where(Hold.state == "ACTIVE").group_by(Hold.company_id, Hold.customer_id))
    entries = _in_range(entries, LedgerEntry, company_id, after, upto)
    holds = _in_range(holds, Hold, company_id, after, upto)
    accounts = _in_range(select(RewardAccount), RewardAccount, company_id, after, upto)
    entries, holds, accounts = entries.subquery(), holds.subquery(), accounts.subquery()

    def joined(sums):
        return and_(sums.c.company_id == accounts.c.company_id, sums.c.customer_id == accounts.c.customer_id)

    reserved = func.coalesce(holds.c.reserved, 0)
    computed = {"reserved": reserved, "pending": func.coalesce(entries.c.pending, 0),
                "available": func.coalesce(entries.c.active, 0) - reserved}
    rows = session.execute(
        select(accounts.c.company_id, accounts.c.customer_id,
               *(accounts.c[name] for name in computed), *computed.values())
        .outerjoin(entries, joined(entries)).outerjoin(holds, joined(holds))
        .where(or_(*(accounts.c[name] != value for name, value in computed.items())))
        .order_by(accounts.c.company_id, accounts.c.customer_id))
    differences = []
    for company, customer, *values in rows:
        stored, expected = values[:len(computed)], values[len(computed):]
        for column, was, should in zip(computed, stored, expected):
            if was != should:
                differences.append(Difference(company, customer, column, int(was), int(should)))
    differences += _lot_differences(session, company_id, after, upto)
    differences += _held_lot_differences(session, company_id, after, upto)
    return sorted(differences,
                  key=lambda difference: (difference.company_id, difference.customer_id))


def _lot_differences(session: Session, company_id: str, after: str | None,
                     upto: str | None) -> list[Difference]:
    """Σ of the lots' remaining = max(0, Σ ACTIVE entries) for every account of the range, and
    no lot's remaining negative or above its amount."""
    entries = (select(LedgerEntry.company_id, LedgerEntry.customer_id,
                      bounds.exact_sum(LedgerEntry.amount).label("active"))
               .where(LedgerEntry.status == "ACTIVE")
               .group_by(LedgerEntry.company_id, LedgerEntry.customer_id))
    held = (select(RewardLot.company_id, RewardLot.customer_id,
                   func.sum(RewardLot.remaining).label("remaining"))
            .group_by(RewardLot.company_id, RewardLot.customer_id))
    accounts = select(RewardAccount.company_id, RewardAccount.customer_id)
    wrong_lots = select(RewardLot.company_id, RewardLot.customer_id, RewardLot.id,
                        RewardLot.remaining, RewardLot.amount).where(
        or_(RewardLot.remaining < 0, RewardLot.remaining > RewardLot.amount))
    entries = _in_range(entries, LedgerEntry, company_id, after, upto)
    held = _in_range(held, RewardLot, company_id, after, upto)
    accounts = _in_range(accounts, RewardAccount, company_id, after, upto)
    wrong_lots = _in_range(wrong_lots, RewardLot, company_id, after, upto)
    entries, held, accounts = entries.subquery(), held.subquery(), accounts.subquery()

    def joined(sums):
        return and_(sums.c.company_id == accounts.c.company_id,
                    sums.c.customer_id == accounts.c.customer_id)

    active = func.coalesce(entries.c.active, 0)
    should = case((active > 0, active), else_=0)
    remaining = func.coalesce(held.c.remaining, 0)
    rows = session.execute(
        select(accounts.c.company_id, accounts.c.customer_id, remaining, should)
        .outerjoin(entries, joined(entries)).outerjoin(held, joined(held))
        .where(remaining != should))
    differences = [Difference(company, customer, "lots remaining", int(was), int(computed))
                   for company, customer, was, computed in rows]
    differences += [Difference(company, customer, f"lot {lot} remaining (of {amount})",
                               int(remaining), max(0, min(int(remaining), int(amount))))
                    for company, customer, lot, remaining, amount in session.execute(wrong_lots)]
    return differences


def _held_lot_differences(session: Session, company_id: str, after: str | None,
                          upto: str | None) -> list[Difference]:
    """No EXPIRY took points that a hold still ACTIVE had reserved (docs/api.md#expiry). The lots as
    they were at an expiry are not stored, so each expiry since the account's oldest active
    hold was placed is held to what the stored rows bound: the due lots then had at most
    max(0, Σ ACTIVE entries then) − what lots not yet due then still hold now (a lot's
    remaining only falls), the holds still active and placed before covered at least their
    amounts, and the available balance was at most the first less the second. The rule
    (`lots.expire`) on those bounds gives the most that could have expired; more is reported.
    Catches a covered lot that expired while its hold lasts; once the hold has ended there is
    nothing left to hold the expiry to."""
    oldest = _in_range(select(Hold.company_id, Hold.customer_id,
                              func.min(Hold.created_at).label("since"))
                       .where(Hold.state == "ACTIVE").group_by(Hold.company_id, Hold.customer_id),
                       Hold, company_id, after, upto).subquery()
    expiries = session.execute(
        select(LedgerEntry.customer_id, LedgerEntry.created_at, func.sum(LedgerEntry.amount))
        .join(oldest, and_(oldest.c.company_id == LedgerEntry.company_id,
                           oldest.c.customer_id == LedgerEntry.customer_id,
                           LedgerEntry.created_at > oldest.c.since))
        .where(LedgerEntry.type == "EXPIRY")
        .group_by(LedgerEntry.customer_id, LedgerEntry.created_at)
        .order_by(LedgerEntry.customer_id, LedgerEntry.created_at)).all()
    differences = []
    for customer, moment, expired in expiries:
        most = _most_expirable(session, company_id, customer, moment)
        if -expired > most:
            differences.append(Difference(company_id, customer,
                                          f"expired at {moment.isoformat()} beyond the holds",
                                          int(-expired), most))
    return differences


def _most_expirable(session: Session, company_id: str, customer_id: str, moment: datetime) -> int:
    """The most an expiry at `moment` could have taken, from the bounds the stored rows give."""
    of_account = (LedgerEntry.company_id == company_id, LedgerEntry.customer_id == customer_id)
    # Entries in force just before it: those written earlier, and the credits of its own
    # moment (its transaction's, written after it, or another's): too much is only looser.
    active = session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)).where(
        *of_account, LedgerEntry.status == "ACTIVE", LedgerEntry.available_at <= moment,
        or_(LedgerEntry.created_at < moment,
            and_(LedgerEntry.created_at == moment, LedgerEntry.amount > 0))))
    not_due = session.scalar(select(func.coalesce(func.sum(RewardLot.remaining), 0)).where(
        RewardLot.company_id == company_id, RewardLot.customer_id == customer_id,
        RewardLot.created_at <= moment,
        or_(RewardLot.expires_at.is_(None), RewardLot.expires_at > moment)))
    held = session.scalar(select(func.coalesce(func.sum(Hold.amount), 0)).where(
        Hold.company_id == company_id, Hold.customer_id == customer_id,
        Hold.state == "ACTIVE", Hold.created_at < moment))
    due = max(0, max(0, int(active)) - int(not_due))
    bound = lots.Lot("due", None, due, due, moment, None, moment)
    return sum(part for _, part in lots.expire([bound], max(0, int(active)) - int(held),
                                               int(held), moment))


def verify_spend(session: Session, now: datetime, company_id: str | None = None) -> list[Difference]:
    """Every account's tier spend against its definition (docs/api.md#tiers), recomputed line by
    line from the sales: Σ floor((amount − discount) × (quantity − returned) / quantity) over
    the sales committed in the window. An account not recounted yet (the periodic job is on
    its way) whose oldest counted sale has left the window, or whose spend was counted over
    an older window, is held to the sales it counted: those from that oldest one on."""
    programs = select(Program.company_id, Program.tier_window_days, Program.tier_window_version)
    if company_id is not None:
        programs = programs.where(Program.company_id == company_id)
    differences = []
    for company, window_days, version in session.execute(
            programs.order_by(Program.company_id)).all():
        since = tiers.window_start(now, window_days)
        stored = {customer: (spend, oldest, counted_for != version)
                  for customer, spend, oldest, counted_for in session.execute(
                      select(RewardAccount.customer_id, RewardAccount.spend,
                             RewardAccount.spend_oldest_at, RewardAccount.spend_window_version)
                      .where(RewardAccount.company_id == company))}
        computed: dict[str, int] = defaultdict(int)
        lines = session.execute(
            select(Sale.customer_id, Sale.committed_at, SaleLine.amount, SaleLine.discount,
                   SaleLine.quantity, SaleLine.returned_quantity)
            .join(SaleLine, and_(SaleLine.company_id == Sale.company_id, SaleLine.sale_id == Sale.id))
            .where(Sale.company_id == company).execution_options(yield_per=10_000))
        for customer, committed_at, amount, discount, quantity, returned in lines:
            _, oldest, behind = stored.get(customer, (0, None, False))
            from_oldest = oldest is not None and committed_at >= oldest
            counted = from_oldest if behind else (
                since is None or committed_at > since
                or (oldest is not None and oldest <= since and from_oldest))
            if counted:
                computed[customer] += tiers.line_spend(amount, discount, quantity, returned)
        for customer, (spend, _, _) in sorted(stored.items()):
            should = spend_rules.counted(computed.get(customer, 0))
            if spend != should:
                differences.append(Difference(company, customer, "spend", spend, should))
    return differences


def count_accounts(session: Session, company_id: str | None = None) -> int:
    query = select(func.count()).select_from(RewardAccount)
    if company_id is not None:
        query = query.where(RewardAccount.company_id == company_id)
    return session.scalar(query) or 0
