"""Periodic upkeep. Correctness never waits for it (everything that matures or expires is
also handled on first touch); it keeps balances and states fresh for readers.

Each task is `task(session, now) -> int` (how many things it handled) and runs in its own
transaction, so one failing task does not hold back the others.
"""
from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.orm import Session

from app.database.engine import database_unavailable, utcnow
from app.operations.reach import database_failure
from app.services.checkout import holds
from app.services.rewards import bonuses, ledger, spend, tiers, upkeep
from app.services.staff import signing_in
from app.services.unit_of_work import UnitOfWork
from app.operations.upkeep import in_batches, prune_outbox, purge_ended_keys, purge_idempotency
from worker.context import job_session, worker_app
from worker.jobs import sweep_outbox
from worker.pushes import sweep_pushes

log = logging.getLogger("worker.periodic")
# Accounts matured per transaction: a register waiting for one of them waits for a few
# accounts' work, not for a whole run's.
MATURE_BATCH = 20
MATURE_MOST = 500  # per run; the next run takes the rest
# Spends recounted per run: a change of the tier window leaves every account of the company
# behind, and a recount is about 1.4 ms; 10,000 a run (about 14 s) take a million accounts
# through in under an hour at the default interval, while touches recount their own first.
SPEND_MOST = 10_000
# Accounts whose points expire, per transaction: small, so that no account (and no register
# waiting for it) stays locked for more than a few milliseconds (docs/performance.md).
EXPIRE_BATCH = 10
EXPIRE_MOST = 50_000  # accounts per run


def mature_rewards(session: Session, now: datetime) -> int:
    def mature_batch(limit: int) -> int:
        due = sorted(ledger.accounts_due(session, now, limit=limit))  # see refresh_batch
        for company_id, customer_id in due:
            ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
        return len(due)

    return in_batches(session, mature_batch, limit=MATURE_BATCH,
                      most=MATURE_MOST // MATURE_BATCH)


def expire_points(session: Session, now: datetime) -> int:
    """Lots whose time has come expire, and reward.expiring goes out for lots soon to."""
    return in_batches(session, lambda limit: upkeep.expire_due_accounts(session, now, limit),
                      limit=EXPIRE_BATCH, most=EXPIRE_MOST // EXPIRE_BATCH)


def refresh_spends(session: Session, now: datetime) -> int:
    """Accounts whose spend was counted over an older window, or whose oldest counted sale has
    left the window: spend recounted, a move noticed (`customer.tier_changed`)."""
    handled = 0
    for program in spend.programs(session):
        tier_list = tiers.from_stored(program.tiers)

        def refresh_batch(limit: int) -> int:
            # In customer order, as every job that locks a batch: two never deadlock.
            due = sorted(spend.stale_accounts(session, program, now, limit))
            work = UnitOfWork.of(session)
            for customer_id in due:
                account = ledger.lock(work, program.company_id, customer_id, now)
                spend.refresh_noticed(work, account, tier_list, now)
            return len(due)

        handled += in_batches(session, refresh_batch, limit=MATURE_BATCH,
                              most=SPEND_MOST // MATURE_BATCH)
    return handled


def credit_birthdays(session: Session, now: datetime) -> int:
    """Birthday bonuses due today in Moscow (the lock credits them, as any touch does)."""
    def birthday_batch(limit: int) -> int:
        due = sorted(bonuses.accounts_due(session, now, limit))  # see refresh_batch
        for company_id, customer_id in due:
            ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
        return len(due)

    return in_batches(session, birthday_batch, limit=MATURE_BATCH, most=MATURE_MOST // MATURE_BATCH)


TASKS = [
    # First: a hold that ran out no longer covers the due points it reserved (docs/api.md#expiry),
    # so they expire in this same run rather than the next.
    ("expire holds", holds.expire_holds),
    ("expire checkout sessions", holds.expire_sessions),
    ("mature rewards", mature_rewards),
    ("expire points", expire_points),
    ("credit birthday bonuses", credit_birthdays),
    ("webhook outbox sweep", sweep_outbox),
    ("wallet push sweep", sweep_pushes),
    ("prune delivered events", prune_outbox),
    ("purge idempotency records", purge_idempotency),
    ("purge ended replaced keys", purge_ended_keys),
    ("forget ended staff sessions and old sign-in failures", signing_in.forget_ended),
    # Last: after a change of the tier window it may take a run's while (SPEND_MOST).
    ("refresh tier spends", refresh_spends),
]


def run_periodic_tasks(app=None, now: datetime | None = None) -> dict[str, int]:
    app = app or worker_app()
    results = {}
    with app.app_context():  # tasks that need settings (the outbox sweep) read the given app's
        for name, task in TASKS:
            try:
                with job_session(app) as session:
                    results[name] = task(session, now or utcnow())
            except Exception as error:
                if database_unavailable(error):
                    # The database away: one line per task, not a traceback every interval.
                    log.warning("periodic task skipped: %s: %s", name,
                                database_failure(error, app.config["SETTINGS"].database_url))
                else:
                    log.exception("periodic task failed: %s", name)
                results[name] = -1
    return results
