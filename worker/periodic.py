"""Periodic upkeep. Correctness never waits for it (everything that matures or expires is
also handled on first touch); it keeps balances and states fresh for readers.

Each task is `task(session, now) -> int` (how many things it handled) and runs in its own
transaction, so one failing task does not hold back the others.
"""
from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.orm import Session

from app.db import utcnow
from app.services import holds, ledger
from worker.context import job_session, worker_app
from worker.jobs import sweep_outbox

log = logging.getLogger("worker.periodic")


def mature_rewards(session: Session, now: datetime) -> int:
    matured = 0
    for company_id, customer_id in ledger.accounts_due(session, now):
        account = ledger.lock_account(session, company_id, customer_id, now)
        matured += 1 if account is not None else 0
    return matured


TASKS = [
    ("mature rewards", mature_rewards),
    ("webhook outbox sweep", sweep_outbox),
    ("expire holds", holds.expire_holds),
    ("expire checkout sessions", holds.expire_sessions),
]


def run_periodic_tasks(app=None, now: datetime | None = None) -> dict[str, int]:
    app = app or worker_app()
    results = {}
    with app.app_context():  # tasks that need settings (the outbox sweep) read the given app's
        for name, task in TASKS:
            try:
                with job_session(app) as session:
                    results[name] = task(session, now or utcnow())
            except Exception:
                log.exception("periodic task failed: %s", name)
                results[name] = -1
    return results
