"""Reports take a fair share: at most two of one company run at once (a third is a 429 with
Retry-After), another company's still runs, a process of several threads keeps one for
everything else, and every way out of a report gives its slot back. Reports are held in the
middle by an event the test sets, never by a sleep."""
from __future__ import annotations

import dataclasses
import threading
import uuid
from contextlib import ExitStack

import pytest

import app.api.reports as report_views
from app import create_app
from app.services.errors import RateLimited
from app.services.reports.fair_share import ReportSlots
from tests.conftest import REDIS_URL
from tests.documented_errors import record_error_answers

WAIT = 60  # seconds a test waits for its own threads before it calls them stuck


class HeldReports:
    """The liability report of `company_id`, held after it took its slot until `go` is set."""

    def __init__(self, monkeypatch, company_id: str):
        self.company_id, self.entered, self.go = company_id, threading.Semaphore(0), threading.Event()
        real = report_views.liability

        def held(session, company_id, now, **kwargs):
            if company_id == self.company_id:
                self.entered.release()
                assert self.go.wait(WAIT)
            return real(session, company_id, now, **kwargs)

        monkeypatch.setattr(report_views, "liability", held)
        self.threads, self.statuses = [], []

    def start(self, app, tenant, count: int) -> None:
        for _ in range(count):
            thread = threading.Thread(target=lambda: self.statuses.append(
                _liability(app, tenant).status_code))
            thread.start()
            self.threads.append(thread)
        for _ in range(count):
            assert self.entered.acquire(timeout=WAIT)

    def finish(self) -> list[int]:
        self.go.set()
        for thread in self.threads:
            thread.join(WAIT)
        return sorted(self.statuses)


def _liability(app, tenant):
    return app.test_client().get("/v1/reports/liability", headers=tenant.headers())


def _web(app, **settings):
    """The app as a web process with these settings, on the same database; its error answers
    are held against the interface document as the suite's app's are."""
    web = create_app(dataclasses.replace(app.config["SETTINGS"], **settings))
    record_error_answers(web)
    return web


def test_a_third_report_of_a_company_waits_for_one_of_two_while_another_company_runs(
        app, tenant, other_tenant, monkeypatch):
    web = _web(app, web_threads=8)
    held = HeldReports(monkeypatch, tenant.company_id)
    held.start(web, tenant, 2)

    third = _liability(web, tenant)
    assert third.status_code == 429, third.get_json()
    assert third.get_json()["code"] == "rate_limited" and int(third.headers["Retry-After"]) >= 1
    csv = web.test_client().get("/v1/reports/ledger?from=2026-01-01&to=2026-01-01",
                                headers=tenant.headers(Accept="text/csv"))
    assert csv.status_code == 429  # every report counts, whatever its kind or form
    assert _liability(web, other_tenant).status_code == 200

    assert held.finish() == [200, 200]
    assert _liability(web, tenant).status_code == 200


def test_a_process_of_several_threads_keeps_one_for_everything_else(app, tenant, other_tenant,
                                                                     monkeypatch):
    web = _web(app, web_threads=2)
    held = HeldReports(monkeypatch, tenant.company_id)
    held.start(web, tenant, 1)
    busy = _liability(web, other_tenant)
    assert busy.status_code == 429 and busy.get_json()["code"] == "rate_limited"
    assert web.test_client().get("/v1/company", headers=other_tenant.headers()).status_code == 200
    assert held.finish() == [200]


def test_a_report_that_fails_gives_its_slot_back(app, tenant, monkeypatch):
    web = _web(app, web_threads=8)

    def broken(*_args, **_kwargs):
        raise RuntimeError("a fault in the report")

    monkeypatch.setattr(report_views, "liability", broken)
    for _ in range(3):
        assert _liability(web, tenant).status_code == 500
    monkeypatch.undo()
    # Both slots are free again, and counted still.
    held = HeldReports(monkeypatch, tenant.company_id)
    held.start(web, tenant, 2)
    assert _liability(web, tenant).status_code == 429
    assert held.finish() == [200, 200]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def slots(request):
    """Two ways of counting: in the process's memory, and in Redis shared by processes (each
    ReportSlots there stands for a web process; in memory they are all the one process's)."""
    namespace = f"loyalty-test-{uuid.uuid4().hex[:8]}"
    redis_url = REDIS_URL if request.param == "redis" else None
    made: list[ReportSlots] = []

    def make(at_once: int = 10):
        if redis_url or not made:
            made.append(ReportSlots(at_once=at_once, per_process=10, redis_url=redis_url,
                                    namespace=namespace))
        return made[-1]
    return make


def test_two_slots_a_company_and_the_services_most(slots):
    first, second = slots(at_once=3), slots(at_once=3)
    with ExitStack() as running:
        running.enter_context(first.slot("a"))
        running.enter_context(second.slot("a"))
        with pytest.raises(RateLimited, match="2 reports of this company"):
            running.enter_context(first.slot("a"))
        running.enter_context(first.slot("b"))
        with pytest.raises(RateLimited, match="as many reports as it may"):
            running.enter_context(second.slot("c"))
    with first.slot("a"), first.slot("a"):
        pass


def test_a_slot_is_given_back_when_the_report_raises(slots):
    counted = slots()
    for _ in range(3):
        with pytest.raises(ZeroDivisionError), counted.slot("a"):
            1 / 0
    with counted.slot("a"), counted.slot("a"):
        pass


@pytest.mark.redis
def test_a_slot_of_a_process_that_died_expires():
    namespace = f"loyalty-test-{uuid.uuid4().hex[:8]}"
    killed = ReportSlots(at_once=10, per_process=10, redis_url=REDIS_URL, namespace=namespace)
    # A process killed in the middle of two reports: its slots are never given back (kept
    # referenced here, or the collector would close them and give them back).
    never_given_back = [killed.slot("a"), killed.slot("a")]
    for running in never_given_back:
        running.__enter__()
    other = ReportSlots(at_once=10, per_process=10, redis_url=REDIS_URL, namespace=namespace)
    with pytest.raises(RateLimited), other.slot("a"):
        pass
    key = f"{namespace}:reports-running:a"
    expiries = other.redis.zrange(key, 0, -1, withscores=True)
    assert len(expiries) == 2 and other.redis.ttl(key) > 0
    # What the passing of SLOT_SECONDS does: the slots' expiry is behind Redis's clock.
    seconds, _micro = other.redis.time()
    other.redis.zadd(key, {token: seconds - 1 for token, _expiry in expiries}, xx=True)
    with other.slot("a"), other.slot("a"):
        pass


@pytest.mark.redis
def test_without_redis_answering_reports_are_counted_in_memory():
    from testbed.ports import free_port

    away = ReportSlots(at_once=10, per_process=10,
                       redis_url=f"redis://127.0.0.1:{free_port()}/0", namespace="loyalty-test")
    with away.slot("a"), away.slot("a"):
        with pytest.raises(RateLimited), away.slot("a"):
            pass


@pytest.mark.postgres
def test_a_report_past_its_time_is_cut_off_with_a_503(app, tenant, monkeypatch):
    from sqlalchemy import text

    from app.services.reports.periods import snapshot

    web = _web(app, web_threads=8, report_timeout_seconds=1)

    def endless(session, company_id, now, *, timeout_seconds):
        snapshot(session, timeout_seconds)
        session.connection().execute(text("SELECT pg_sleep(600)"))

    monkeypatch.setattr(report_views, "liability", endless)
    cut = _liability(web, tenant)
    assert cut.status_code == 503, cut.get_json()
    assert cut.get_json()["code"] == "report_timed_out" and int(cut.headers["Retry-After"]) >= 1
    monkeypatch.undo()
    assert _liability(web, tenant).status_code == 200
    # The limit was the report's transaction's: the next request's connection has none.
    with web.extensions["engine"].connect() as connection:
        assert connection.exec_driver_sql("SHOW statement_timeout").scalar() == "0"
