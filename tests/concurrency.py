"""Running requests at the same moment, for the race tests on PostgreSQL."""
from __future__ import annotations

import threading
import time

from sqlalchemy import text


def run_together(calls: list) -> list:
    """Each call in a thread of its own, all released at once by a barrier; what each
    returned, or the exception it raised, in order."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(index, call):
        barrier.wait()
        try:
            results[index] = call()
        except Exception as error:  # returned for the test to assert on
            results[index] = error

    threads = [threading.Thread(target=run, args=item) for item in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def waiting_on_locks(app) -> int:
    """Database sessions of the suite's database that wait on a lock (PostgreSQL)."""
    with app.extensions["engine"].connect() as connection:
        return connection.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"))


def run_behind_a_row_lock(app, db, locking_select, calls: list) -> list:
    """`calls` run together while the test's own session `db` holds the row `locking_select`
    (a SELECT … FOR UPDATE) locks, released once every call waits on it, so they truly
    overlap; what each returned, or the exception it raised, in order."""
    db.execute(locking_select)
    answers: list = []
    together = threading.Thread(target=lambda: answers.extend(run_together(calls)))
    together.start()
    while waiting_on_locks(app) < len(calls) and together.is_alive():
        time.sleep(0.01)
    db.commit()
    together.join()
    return answers


def raising(results: list) -> list:
    """The results, after raising the first exception among them."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def delayed_job(app, task, delay: float = 0.0):
    """A periodic task as the worker runs it, for a race: after `delay` seconds (a few
    milliseconds either way, so both orders happen), `task(session)` in a session of its own,
    committed; what it returned."""
    def job():
        time.sleep(delay)
        session = app.extensions["session_factory"]()
        try:
            handled = task(session)
            session.commit()
            return handled
        finally:
            session.close()
    return job
