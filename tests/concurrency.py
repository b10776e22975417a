"""Running requests at the same moment, for the race tests on PostgreSQL."""
from __future__ import annotations

import threading
import time


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
