"""Sales a register made while it could not reach the service, sent later (offline sales).

The register has sold already: the customer paid without bonuses, so such a sale redeems
nothing, and it is booked as a commit without a hold is (sales.book_sale): the accrual at the
customer's percent now (tier, else program, decided on the spend before this sale), each
line's campaigns as they ran when the sale was made (one that has ended since still gives its
percent), the store's catalog flags as now; PENDING until soldAt + accrualDelayDays; its
spend counts toward tiers at soldAt. Its register is the terminal the request names, in
whatever state it is now.

One sale per receipt, online or offline: the context names the receipt's sale if it has one
(a 409 with its id, for the register to reconcile); at the very same moment as another sale
of the receipt, the receipt's unique key in the database lets one of them commit, and the
other is the same 409 (its body then without the id: the register finds the sale by its
receipt, or sends its request again).
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from app.models import Cashier, Customer, Program, Store, Subscription
from app.models.base import new_id
from app.services.checkout import pricing
from app.services.checkout.quotes import catalog_items, receipt_lines
from app.services.checkout.resources import SaleResource
from app.services.checkout.sales import book_sale, receipt_committed
from app.services.checkout.sessions import cashier_of, locked_account
from app.services.checkout.statements import SALES, catalog_of_store, lock_account
from app.services.errors import Conflict, Forbidden, InvalidField, NotFound
from app.services.locations.stores import RegisterTerminal
from app.services.program import matching
from app.services.rewards import ledger, spend, tiers
from app.services.unit_of_work import UnitOfWork

# How far back the program may let a register send its sales (offlineSaleWindowDays).
LONGEST_WINDOW_DAYS = 30
# A register's clock runs a little ahead of ours, never more than this.
CLOCK_LEAD = timedelta(minutes=5)
# The ways a register names the customer: id, phone (E.164), or the wallet card's number.
_CUSTOMERS = Customer.__table__
CUSTOMER_KEYS = {"customer_id": _CUSTOMERS.c.id, "phone": _CUSTOMERS.c.phone,
                 "card_number": _CUSTOMERS.c.card_number}

_PROGRAMS, _SUBSCRIPTIONS = Program.__table__, Subscription.__table__
_CASHIERS, _STORES = Cashier.__table__, Store.__table__


def _of_company(column, *where):
    return select(column).where(column.table.c.company_id == bindparam("company"),
                                *where).scalar_subquery()


def _context(customer_key):
    """Everything an offline sale checks, in one statement: the customer the register named,
    the program and the subscription, any sale the receipt has, the store's time zone and
    the cashier as the catalog knows them."""
    return (select(
        _of_company(_CUSTOMERS.c.id, customer_key == bindparam("customer")).label("customer_id"),
        _PROGRAMS.c.accrual_bp, _PROGRAMS.c.max_redeem_bp, _PROGRAMS.c.accrual_delay_days,
        _PROGRAMS.c.tiers, _PROGRAMS.c.campaigns_version, _PROGRAMS.c.offline_sale_window_days,
        _SUBSCRIPTIONS.c.status, _SUBSCRIPTIONS.c.access_until,
        _of_company(SALES.c.id, SALES.c.external_receipt_id == bindparam("receipt_id"))
        .label("sale_id"),
        _of_company(_STORES.c.timezone, _STORES.c.id == bindparam("store_id")).label("timezone"),
        *(_of_company(column, _CASHIERS.c.external_id == bindparam("cashier_external_id"))
          .label(f"cashier_{column.name}") for column in (_CASHIERS.c.id, _CASHIERS.c.name)))
        .select_from(_PROGRAMS.join(_SUBSCRIPTIONS,
                                    _SUBSCRIPTIONS.c.company_id == _PROGRAMS.c.company_id))
        .where(_PROGRAMS.c.company_id == bindparam("company")))


def _locked_context(customer_key):
    """PostgreSQL's: the context, the customer's account under its row lock and the lines'
    catalog flags, in one round trip."""
    context = _context(customer_key).cte("context")
    return select(context, *lock_account(select(context.c.customer_id).scalar_subquery()),
                  catalog_of_store(bindparam("store_id")))


# By the way the customer is named: (SQLite's context, PostgreSQL's).
_CONTEXTS = {name: (_context(key), _locked_context(key)) for name, key in CUSTOMER_KEYS.items()}


def record_offline_sale(session: Session, company_id: str, *, terminal: RegisterTerminal,
                        external_receipt_id: str, sold_at: datetime, customer: dict,
                        lines: list[dict], cashier: dict | None, now: datetime) -> SaleResource:
    """Book a sale the register made at `sold_at` without the service. `customer` names the
    customer one way ({customer_id | phone | card_number: value})."""
    if sold_at > now + CLOCK_LEAD:
        raise InvalidField(["body", "soldAt"], "more than 5 minutes ahead of the service's clock",
                           "value_error")
    work = UnitOfWork.of(session)
    (customer_key, customer_value), = ((key, value) for key, value in customer.items()
                                       if value is not None)
    skus = sorted({line["sku"] for line in lines if line.get("sku")})
    ctx = work.run(_CONTEXTS[customer_key][work.postgresql], {
        "company": company_id, "customer": customer_value, "receipt_id": external_receipt_id,
        "store_id": terminal.store_id, "skus": skus,
        "cashier_external_id": cashier["external_id"] if cashier else None}).one()
    _check(ctx, sold_at, now)
    cashier_id = cashier_of(session, company_id, ctx, cashier, now)
    account = ledger.lock(work, company_id, ctx.customer_id, now, locked_account(work, ctx))
    tier_list = tiers.from_stored(ctx.tiers)
    spend_before = spend.refresh_for_notice(work, account, now)

    items = catalog_items(work, company_id, terminal.store_id,
                          ctx.catalog if work.postgresql else None, skus)
    campaigns = matching.live_campaigns(work, company_id, ctx.campaigns_version, now,
                                        since=now - timedelta(days=LONGEST_WINDOW_DAYS))
    receipt = receipt_lines(lines, items, campaigns.running(terminal.store_id, sold_at))
    # The sale that crosses a tier's threshold earns at the old rate, as a commit's does.
    priced = pricing.price_commit(
        receipt, max_redeem_bp=ctx.max_redeem_bp,
        accrual_bp=tiers.customer_accrual_bp(tier_list, account.spend, ctx.accrual_bp),
        redeemed=0)

    return book_sale(work, account, sale={
        "company_id": company_id, "id": new_id(), "checkout_session_id": None,
        "external_receipt_id": external_receipt_id, "customer_id": ctx.customer_id,
        "quote_id": None, "redeemed": 0,
        "accrual_available_at": sold_at + timedelta(days=ctx.accrual_delay_days),
        "committed_at": sold_at, "redemption_expires_at": None,
        "terminal_id": terminal.id, "store_id": terminal.store_id, "cashier_id": cashier_id},
        lines=[{"lineId": line["line_id"], "sku": line.get("sku"), "name": line.get("name"),
                "quantity": line["quantity"], "amount": line["amount"]} for line in lines],
        priced=priced, tier_list=tier_list, spend_before=spend_before,
        timezone=ctx.timezone, now=now)


def _check(ctx, sold_at: datetime, now: datetime) -> None:
    if ctx.customer_id is None:
        raise NotFound("customer")
    if Subscription.is_stopped(ctx, now):
        raise Forbidden("the subscription is stopped", code="subscription_inactive")
    if ctx.offline_sale_window_days == 0:
        raise Conflict("the program takes no offline sales (offlineSaleWindowDays is 0)",
                       code="offline_sales_disabled")
    if sold_at < now - timedelta(days=ctx.offline_sale_window_days):
        raise Conflict(f"soldAt is more than {ctx.offline_sale_window_days} days ago, the "
                       "program's offlineSaleWindowDays", code="offline_sale_too_old")
    if ctx.sale_id is not None:
        raise receipt_committed(ctx.sale_id)
