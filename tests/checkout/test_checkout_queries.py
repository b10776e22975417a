"""Round trips per request on the register's path, counted at the driver: a ceiling that
fails when a lazy load, an N+1 or an extra lookup creeps in."""
import logging
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import event

from tests.checkout.conftest import line

ROOT = Path(__file__).resolve().parents[2]
# A receipt of 5 lines: per-line work must not add statements.
RECEIPT = [line(str(i), f"{100 + i}.00", sku=f"SKU{i}") for i in range(5)]


@contextmanager
def statements(app):
    seen = []

    def count(conn, cursor, statement, parameters, context, executemany):
        # SQLite's explicit BEGIN IMMEDIATE is not counted, nor the driver's own BEGIN and
        # COMMIT on PostgreSQL, which listeners do not see.
        if statement != "BEGIN IMMEDIATE":
            seen.append(statement)

    engine = app.extensions["engine"]
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


# Every request: authenticate, with the pos key's terminal in the same statement (1); each
# idempotent one also its idempotency record (taken with one insert, completed with the
# response: 2). Then the operation's own statements:
#   open     the checks and the cashier in one read, the session                       2
#   quote    the session's context, the catalog flags, the session's move, the quote   4
#   hold     context, session's move, account lock, hold, account, event               6
#   release  context, session's move, hold's end, account lock, account, event         6
#   commit   context, session's move, capture, account lock, the account's lots (the
#            redemption takes from them), sale, its lines, ledger entries (one batch),
#            the accrual's lot, lots taken from (one batch), account, event           12
#   return   sale lock, its lines, account lock, the account's lots (the reversal takes
#            from them), line updates (one batch), sale state, return, ledger entries,
#            the restore's lot, lots taken from, account, event                       12
#            (+ the pending of the sale, when its accrual still waits)
#   lookup   the sale, its lines (the register looks up without its pos key here)   2
STATEMENTS = {"open": 5, "quote": 7, "hold": 9, "release": 9, "commit": 15, "return": 15,
              "lookup": 3}
# On PostgreSQL the session's move reads its context in the same statement (statements.StateMove),
# with the quote's catalog flags, the commit's capture of the hold and the account's lock of a
# hold or a commit; the idempotency record is taken by the key's lookup (app/web/idempotency.py:
# Claim). The driver's BEGIN and COMMIT come on top of these.
#   open     key + record, checks, session, record's answer                              4
#   quote    key + record, context + move + flags, quote, answer                         4
#   hold     key + record, context + move + lock, hold, event, account, answer           6
#   release  key + record, context + move, hold's end, lock, event, account, answer      7
#   commit   key + record, context + move + capture + lock, lots, sale, lines, entries,
#            the accrual's lot, event, lots taken from, account, answer                 11
#   return   key + record, sale lock, its lines, lock, lots, line updates, sale state,
#            return, entries, the restore's lot, event, lots taken from, account, answer 14
#   lookup   key, sale, lines                                                            3
POSTGRESQL_STATEMENTS = {"open": 4, "quote": 4, "hold": 6, "release": 7, "commit": 11,
                         "return": 14, "lookup": 3}


@pytest.fixture
def counted(app, register, shop):
    shop.catalog({f"SKU{i}": (True, i != 4) for i in range(5)})
    customer = shop.customer("1000.00")
    results = {}

    def measure(name, call):
        with statements(app) as seen:
            value = call()
        results[name] = list(seen)
        return value
    return customer, measure, results


def test_statements_per_request_stay_few(app, register, counted):
    customer, measure, results = counted
    cashier = {"externalId": "C", "name": "Olga"}
    register.open(customer, cashier=cashier)  # the key's once-a-minute touch; a known cashier
    session = measure("open", lambda: register.open(customer, "R-1", cashier=cashier))
    quote = measure("quote", lambda: register.quote(session["id"], RECEIPT))
    measure("hold", lambda: register.hold(session["id"], quote["id"]))
    measure("release", lambda: register.release(session["id"]))
    register.hold(session["id"], quote["id"])
    sale = measure("commit", lambda: register.commit(session["id"], quote["id"]))
    measure("return", lambda: register.return_lines(sale["id"], [("1", "1"), ("2", "1")]))
    measure("lookup", lambda: register.lookup("R-1"))
    counts = {name: len(seen) for name, seen in results.items()}
    verbs = {name: [s.split(None, 1)[0] for s in seen] for name, seen in results.items()}
    postgresql = app.extensions["engine"].dialect.name == "postgresql"
    ceilings = POSTGRESQL_STATEMENTS if postgresql else STATEMENTS
    assert all(counts[name] <= ceiling for name, ceiling in ceilings.items()), (counts, verbs)


def test_the_registers_requests_make_no_orm_session(app, register, counted, monkeypatch):
    """Every statement of theirs goes through the unit of work, so the ORM's session (about
    0.1 ms of CPU a request to make, begin, commit and close) is never made."""
    from app.services.transactions import WorkSession

    customer, _, _ = counted
    cashier = {"externalId": "C", "name": "Olga"}
    register.open(customer, cashier=cashier)  # the key's once-a-minute touch goes by the ORM
    made = []
    original = WorkSession.__init__
    monkeypatch.setattr(WorkSession, "__init__",
                        lambda self, *a, **k: (made.append(1), original(self, *a, **k))[1])
    session = register.open(customer, "R-2", cashier=cashier)
    quote = register.quote(session["id"], RECEIPT)
    register.hold(session["id"], quote["id"])
    register.release(session["id"])
    register.hold(session["id"], quote["id"])
    sale = register.commit(session["id"], quote["id"])
    register.return_lines(sale["id"], [("1", "1")])
    register.lookup("R-2")
    assert made == []


def test_below_the_views_the_registers_requests_read_no_proxy(app, register, counted,
                                                              monkeypatch, caplog):
    """An attribute read through Flask's `request`, `g` or `current_app` fails the proxy's own
    lookup first (a formatted AttributeError and two calls, some 2 µs): our hooks, wrappers
    and services take the objects themselves (docs/decisions.md). The views may read them.
    At INFO, as served, so the request's log line is built and written too."""
    import werkzeug.local

    caplog.set_level(logging.INFO)

    readers = []
    lookup = werkzeug.local._ProxyLookup.__get__

    def recorded(self, instance, owner=None):
        if instance is not None:
            readers.append(sys._getframe(1).f_code.co_filename)
        return lookup(self, instance, owner)

    customer, _, _ = counted
    cashier = {"externalId": "C", "name": "Olga"}
    register.open(customer, cashier=cashier)  # the key's once-a-minute touch
    monkeypatch.setattr(werkzeug.local._ProxyLookup, "__get__", recorded)
    session = register.open(customer, "R-3", cashier=cashier)
    quote = register.quote(session["id"], RECEIPT)
    register.hold(session["id"], quote["id"])
    register.commit(session["id"], quote["id"])
    ours = {Path(name).relative_to(ROOT).as_posix() for name in readers
            if Path(name).is_relative_to(ROOT / "app")}
    assert readers and ours <= {"app/api/checkout.py"}, ours


def test_a_sale_made_offline_costs_no_more_than_a_commit(app, register, counted, monkeypatch):
    """The register that comes back with its queue sends them one after another: each sent
    sale costs no more statements (round trips on PostgreSQL) than a commit without a hold,
    whether its accrual waits or is active at once (a lot), with the cashier known and no ORM
    session."""
    from datetime import timedelta

    from app.database.engine import utcnow
    from app.services.transactions import WorkSession
    from app.wire import format_timestamp

    customer, measure, results = counted
    cashier = {"externalId": "C", "name": "Olga"}
    register.open(customer, cashier=cashier)  # the key's touch; a known cashier
    # A commit without a hold: what an offline sale is booked as (it redeems nothing).
    session = register.open(customer, "R-4", cashier=cashier)
    quote = register.quote(session["id"], RECEIPT, redeem="0.00")
    measure("commit", lambda: register.commit(session["id"], quote["id"]))
    # The program's delay is 7 days: the second sale's accrual is active at once.
    register.shop.program(accrual_delay_days=7, offline_sale_window_days=30)
    made = []
    original = WorkSession.__init__
    monkeypatch.setattr(WorkSession, "__init__",
                        lambda self, *a, **k: (made.append(1), original(self, *a, **k))[1])
    for name, days in (("pending", 0), ("active", 8)):
        sold_at = format_timestamp(utcnow() - timedelta(days=days, minutes=5))
        measure(name, lambda: register.offline({"customerId": customer}, RECEIPT, sold_at,
                                               cashier=cashier))
    counts = {name: len(seen) for name, seen in results.items()}
    ceiling = STATEMENTS["commit"]
    assert counts["pending"] <= counts["commit"] <= ceiling, counts
    assert counts["active"] <= counts["commit"], counts
    assert made == []
