"""The register's statements, built once at import (SQLAlchemy caches their compilation).

Everything an operation on a checkout session reads comes in one statement (CONTEXT); each
state move is a conditional UPDATE that takes the session's row lock and succeeds only from
the state read. Lock order everywhere: checkout session row, then reward account row.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, bindparam, case, exists, func, insert, select, update

from app.models import (Cashier, CatalogItem, CheckoutSession, Customer, Hold, Program, Quote,
                        RewardAccount, Sale, SaleLine, Store, Subscription, Terminal)
from app.models.checkout import ACTIVE, CAPTURED, COMMITTED, EXPIRED, OPEN, RELEASED
from app.services.rewards.locked_account import LOCKED_COLUMNS


SESSIONS, QUOTES, HOLDS = CheckoutSession.__table__, Quote.__table__, Hold.__table__
SALES, SALE_LINES, CATALOG = Sale.__table__, SaleLine.__table__, CatalogItem.__table__
_PROGRAMS, _SUBSCRIPTIONS = Program.__table__, Subscription.__table__
_TERMINALS, _STORES, _ACCOUNTS = Terminal.__table__, Store.__table__, RewardAccount.__table__
_CUSTOMERS, _CASHIERS = Customer.__table__, Cashier.__table__


def session_key():
    return (SESSIONS.c.company_id == bindparam("company"),
            SESSIONS.c.id == bindparam("session_id"))


def _of_session(column, *where):
    """A value of a row belonging to the session, as a correlated scalar subquery."""
    return select(column).where(*where).scalar_subquery()


_OF_SESSION_COMPANY = {table: table.c.company_id == SESSIONS.c.company_id
                       for table in (_TERMINALS, _STORES, HOLDS, _ACCOUNTS, SALES)}
_ACCOUNT_OF_SESSION = (_OF_SESSION_COMPANY[_ACCOUNTS],
                       _ACCOUNTS.c.customer_id == SESSIONS.c.customer_id)

# The quote is named by the parameter `quote`, not `quote_id`: a parameter named as a column
# of a table an UPDATE here changes (holds.quote_id, in the commit's capture) is taken by
# SQLAlchemy as a value to SET there.
# Everything an operation on a session needs, in one statement: the session, the program's
# percents, tiers and campaigns' version, the subscription, the named quote, the terminal's state, the store's time zone,
# the active hold, the account's balance, spend and birthday, and any sale already made for the receipt. The
# optional parts are scalar subqueries rather than outer joins: PostgreSQL plans a nine-way
# join in milliseconds, which on this path costs more than running it.
CONTEXT = (
    select(SESSIONS.c.id, SESSIONS.c.external_receipt_id, SESSIONS.c.customer_id,
           SESSIONS.c.terminal_id, SESSIONS.c.store_id, SESSIONS.c.state,
           SESSIONS.c.latest_quote_id, SESSIONS.c.expires_at,
           _PROGRAMS.c.accrual_bp, _PROGRAMS.c.max_redeem_bp, _PROGRAMS.c.accrual_delay_days,
           _PROGRAMS.c.hold_ttl_seconds, _PROGRAMS.c.tiers, _PROGRAMS.c.tier_window_days,
           _PROGRAMS.c.tier_window_version, _PROGRAMS.c.campaigns_version,
           _SUBSCRIPTIONS.c.status, _SUBSCRIPTIONS.c.access_until,
           QUOTES.c.id.label("quote_id"), QUOTES.c.lines.label("quote_lines"),
           QUOTES.c.packed_lines.label("quote_packed_lines"),
           QUOTES.c.discount.label("quote_discount"),
           _of_session(_TERMINALS.c.state, _OF_SESSION_COMPANY[_TERMINALS],
                       _TERMINALS.c.id == SESSIONS.c.terminal_id).label("terminal_state"),
           _of_session(_STORES.c.timezone, _OF_SESSION_COMPANY[_STORES],
                       _STORES.c.id == SESSIONS.c.store_id).label("timezone"),
           _of_session(HOLDS.c.expires_at, _OF_SESSION_COMPANY[HOLDS],
                       HOLDS.c.checkout_session_id == SESSIONS.c.id,
                       HOLDS.c.state == ACTIVE).label("hold_expires_at"),
           _of_session(_ACCOUNTS.c.available, *_ACCOUNT_OF_SESSION).label("available"),
           _of_session(_ACCOUNTS.c.next_maturity_at,
                       *_ACCOUNT_OF_SESSION).label("next_maturity_at"),
           _of_session(_ACCOUNTS.c.next_expiry_at,
                       *_ACCOUNT_OF_SESSION).label("next_expiry_at"),
           _of_session(_ACCOUNTS.c.spend, *_ACCOUNT_OF_SESSION).label("spend"),
           _of_session(_ACCOUNTS.c.spend_oldest_at, *_ACCOUNT_OF_SESSION).label("spend_oldest_at"),
           _of_session(_ACCOUNTS.c.spend_window_version,
                       *_ACCOUNT_OF_SESSION).label("spend_window_version"),
           _of_session(_ACCOUNTS.c.birthday_due_on, *_ACCOUNT_OF_SESSION).label("birthday_due_on"),
           _of_session(SALES.c.id, _OF_SESSION_COMPANY[SALES],
                       SALES.c.external_receipt_id == SESSIONS.c.external_receipt_id)
           .label("sale_id"))
    .select_from(
        SESSIONS
        .join(_PROGRAMS, _PROGRAMS.c.company_id == SESSIONS.c.company_id)
        .join(_SUBSCRIPTIONS, _SUBSCRIPTIONS.c.company_id == SESSIONS.c.company_id)
        .outerjoin(QUOTES, and_(QUOTES.c.company_id == SESSIONS.c.company_id,
                                QUOTES.c.id == bindparam("quote"),
                                QUOTES.c.checkout_session_id == SESSIONS.c.id)))
    .where(*session_key())
)

def _of_company(table, column, id_param: str):
    return select(column).where(table.c.company_id == bindparam("company"),
                                table.c.id == bindparam(id_param)).scalar_subquery()


# What a new session must check, in one statement; and the cashier as the catalog knows it.
CREATION_CONTEXT = select(
    _of_company(_CUSTOMERS, _CUSTOMERS.c.id, "customer_id").label("customer_id"),
    select(SALES.c.id).where(SALES.c.company_id == bindparam("company"),
                             SALES.c.external_receipt_id == bindparam("receipt_id"))
    .scalar_subquery().label("sale_id"),
    _of_company(_TERMINALS, _TERMINALS.c.state, "terminal_id").label("terminal_state"),
    _of_company(_TERMINALS, _TERMINALS.c.store_id, "terminal_id").label("terminal_store_id"),
    _of_company(_STORES, _STORES.c.id, "store_id").label("store_id"),
    *(select(column).where(_CASHIERS.c.company_id == bindparam("company"),
                           _CASHIERS.c.external_id == bindparam("cashier_external_id"))
      .scalar_subquery().label(f"cashier_{column.name}")
      for column in (_CASHIERS.c.id, _CASHIERS.c.name)),
)

CATALOG_FLAGS = select(CATALOG.c.sku, CATALOG.c.redeemable, CATALOG.c.accruable,
                       CATALOG.c.category).where(
    CATALOG.c.company_id == bindparam("company"), CATALOG.c.store_id == bindparam("store_id"),
    CATALOG.c.sku.in_(bindparam("skus", expanding=True)))

@dataclass(frozen=True)
class StateMove:
    """A move of the session's state, which takes its row lock and succeeds only from the
    state read: `alone`, the state read (`seen`) a parameter; `with_context`, the CONTEXT read
    and the move in one statement (PostgreSQL's data-modifying WITH), `seen` the state that
    statement's CONTEXT read, and `moved` in its row (sessions.read_and_move), with whatever
    more `also(context, moved)` gives it."""

    alone: object
    with_context: object


def state_move(*where, from_seen: bool = True, also=None, **values) -> StateMove:
    def move(seen):
        condition = (SESSIONS.c.state == seen,) if from_seen else ()
        return update(SESSIONS).where(*session_key(), *condition, *where).values(**values)

    context = CONTEXT.cte("context")
    moved = move(select(context.c.state).scalar_subquery()).returning(SESSIONS.c.id).cte("moved")
    more = also(context, moved) if also else ()
    return StateMove(move(bindparam("seen")),
                     select(context, exists(select(moved.c.id)).label("moved"), *more))


def catalog_of_store(store_id):
    """The receipt's lines (`skus`) in the store's catalog, as CATALOG_FLAGS reads them, for
    a statement of PostgreSQL's: a JSON list of [sku, redeemable, accruable, category], NULL
    when none is there."""
    rows = (select(func.json_agg(func.json_build_array(*CATALOG_FLAGS.selected_columns)))
            .where(CATALOG.c.company_id == bindparam("company"), CATALOG.c.store_id == store_id,
                   CATALOG.c.sku.in_(bindparam("skus", expanding=True))))
    return rows.scalar_subquery().label("catalog")


def _catalog_flags(context, moved):
    """The quote's lines in the session's store's catalog."""
    return (catalog_of_store(context.c.store_id),)


# State moves: each takes the session's row lock and succeeds only from the state read.
# The quote's, on PostgreSQL with its lines' catalog flags.
QUOTED = state_move(also=_catalog_flags, state=OPEN, latest_quote_id=bindparam("new_quote_id"))

_HOLD_RETURNING = (HOLDS.c.id, HOLDS.c.checkout_session_id, HOLDS.c.customer_id, HOLDS.c.amount,
                   HOLDS.c.state, HOLDS.c.expires_at, HOLDS.c.created_at, HOLDS.c.released_at)
_ACTIVE_HOLD_OF_SESSION = (HOLDS.c.company_id == bindparam("company"),
                           HOLDS.c.checkout_session_id == bindparam("session_id"),
                           HOLDS.c.state == ACTIVE)
CAPTURE_HOLD = (update(HOLDS)
                .where(*_ACTIVE_HOLD_OF_SESSION, HOLDS.c.expires_at > bindparam("now"))
                .values(state=CAPTURED).returning(*_HOLD_RETURNING))


LOCKED_NAMES = tuple(f"locked_{column.name}" for column in LOCKED_COLUMNS)


def lock_once_moved(context, moved):
    """The session's customer's account under its row lock, in the move's statement once it
    moved (after the session's row lock, as everywhere): LOCKED_COLUMNS, each named as in
    LOCKED_NAMES (sessions.locked_account reads them back). A row lock taken in a statement
    returns the row's latest version, as LOCK's own does; whatever else is read under the lock
    (the lots) is read by statements after it."""
    return lock_account(select(context.c.customer_id).scalar_subquery(),
                        exists(select(moved.c.id)))


def lock_account(customer_id, *only_if):
    """The account of `customer_id` (the customer's id, as an expression of the statement)
    under its row lock, taken in that statement when `only_if` holds: LOCKED_COLUMNS, each
    named as in LOCKED_NAMES."""
    locked = (select(*LOCKED_COLUMNS)
              .where(_ACCOUNTS.c.company_id == bindparam("company"),
                     _ACCOUNTS.c.customer_id == customer_id, *only_if)
              .with_for_update(of=_ACCOUNTS).cte("locked"))
    return tuple(select(column).scalar_subquery().label(name)
                 for column, name in zip(locked.c, LOCKED_NAMES))


def _capture_once_moved(context, moved):
    """The commit's CAPTURE_HOLD in its move's statement, once it moved (the session's row
    lock before the hold's, as everywhere): `captured_id` and `captured_amount`, NULL when
    there was none."""
    captured = CAPTURE_HOLD.where(exists(select(moved.c.id))).cte("captured")
    return (select(captured.c.id).scalar_subquery().label("captured_id"),
            select(captured.c.amount).scalar_subquery().label("captured_amount"))


# The commit's move; on PostgreSQL with the capture of its hold, then its account's lock.
COMMITTED_MOVE = state_move(
    SESSIONS.c.latest_quote_id == bindparam("quote"), state=COMMITTED,
    also=lambda context, moved: (*_capture_once_moved(context, moved),
                                 *lock_once_moved(context, moved)))
# Ends the session's active hold: EXPIRED if its time is up, else RELEASED.
END_HOLD = (update(HOLDS).where(*_ACTIVE_HOLD_OF_SESSION)
            .values(state=case((HOLDS.c.expires_at <= bindparam("now"), EXPIRED), else_=RELEASED),
                    released_at=bindparam("now"), release_reason=bindparam("reason"))
            .returning(*_HOLD_RETURNING))
EXPIRE_HOLD = (update(HOLDS)
               .where(*_ACTIVE_HOLD_OF_SESSION, HOLDS.c.expires_at <= bindparam("now"))
               .values(state=EXPIRED, released_at=bindparam("now"))
               .returning(*_HOLD_RETURNING))

INSERT_SESSION, INSERT_QUOTE = insert(SESSIONS), insert(QUOTES)
INSERT_SALE, INSERT_SALE_LINES = insert(SALES), insert(SALE_LINES)

SALE_BY_RECEIPT = select(SALES).where(SALES.c.company_id == bindparam("company"),
                                      SALES.c.external_receipt_id == bindparam("receipt_id"))
LINES_OF_SALE = (select(SALE_LINES)
                 .where(SALE_LINES.c.company_id == bindparam("company"),
                        SALE_LINES.c.sale_id == bindparam("sale_id"))
                 .order_by(SALE_LINES.c.position))

