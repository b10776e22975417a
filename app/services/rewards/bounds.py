"""The bounds on an account's figures (docs/api.md#money): available, pending and reserved each stay
within ±BALANCE_BOUND, far inside their 64-bit columns, however large the amounts sent.

Points move between the three without a credit (pending matures into available, a hold
reserves from it and a release gives back), so a credit is bounded by what the account holds
in all: available + pending + reserved stays within the bound, and pending on its own too
(a debt on available could otherwise make room for more pending than the bound). Then no
later move takes a figure beyond it. On the negative side only a clawback into debt
(UNLIMITED) takes available below zero; it goes down to −BALANCE_BOUND and no further.
"""
from __future__ import annotations

from sqlalchemy import func

BALANCE_BOUND = 10 ** 15  # kopecks: 10,000,000,000,000.00


# A customer's tier spend (docs/api.md#tiers) is a sum over every sale of the window, each up to
# the bound: it is counted up to this ceiling, far above any tier's minSpend, and stops there.
SPEND_CEILING = 10 ** 18  # kopecks


def held(account) -> int:
    """What the account holds in all: where available may get to with no credit at all."""
    return account.available + account.pending + account.reserved


def credit_room(account, *, pending: bool = False) -> int:
    """The most a credit may add (ACTIVE at once, or `pending`) within the bound."""
    room = BALANCE_BOUND - held(account)
    if pending:
        room = min(room, BALANCE_BOUND - account.pending)
    return max(0, room)


def debt_room(available: int) -> int:
    """The most a debit may take from `available` when it may leave a debt."""
    return max(0, available + BALANCE_BOUND)


# A SUM over many rows (every sale of a customer, every entry of an account) can pass 64 bits
# on the way even when each row and the total are bounded: PostgreSQL sums bigint as numeric,
# but SQLite stops with "integer overflow". Summed in two parts that each stay small for 2^31
# rows, the total is exact on both while it fits 64 bits; beyond, SQLite's is an approximate
# float (its arithmetic, unlike its SUM, does not stop), PostgreSQL's still exact.
_SPLIT = 2 ** 32


def exact_sum(column):
    """SUM(column), 0 over no rows, that never stops on an overflow."""
    return func.coalesce(func.sum(column // _SPLIT) * _SPLIT + func.sum(column % _SPLIT), 0)
