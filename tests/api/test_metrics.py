"""GET /metrics (docs/api.md#availability) in one process: the token, the labels, the figures read
at scrape time. tests/test_metrics_gunicorn.py scrapes two gunicorn workers."""
from __future__ import annotations

import dataclasses
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import update

from app import create_app
from app.database.engine import utcnow
from app.models import WebhookDelivery
from app.services.webhooks import delivery, endpoints
from app.services.webhooks.outbox import record_event
from testbed.ports import free_port
from tests.conftest import TEST_PEPPER

TOKEN = "metrics-token-for-tests"


def samples(text: str) -> dict[tuple, float]:
    """{(sample name, sorted labels): value} of a scrape."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape(client) -> dict[tuple, float]:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.content_type.startswith("text/plain")
    return samples(response.get_data(as_text=True))


def requests_counted(scraped, route, method, status) -> float:
    key = ("loyalty_http_requests_total",
           tuple(sorted({"route": route, "method": method, "status": str(status)}.items())))
    return scraped.get(key, 0.0)


@pytest.fixture(scope="module")
def metrics_app(settings):
    return create_app(dataclasses.replace(settings, metrics_token=TOKEN))


@pytest.fixture
def scraper(metrics_app):
    return metrics_app.test_client()


def test_without_a_token_setting_there_is_no_metrics_route(client):
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 404 and response.get_json()["code"] == "not_found"


def test_only_the_token_opens_it(scraper):
    missing = scraper.get("/metrics")
    assert missing.status_code == 401 and missing.get_json()["code"] == "missing_api_key"
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    for header in (f"Bearer {TOKEN}x", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN[:-1]}"):
        refused = scraper.get("/metrics", headers={"Authorization": header})
        assert refused.status_code == 401 and refused.get_json()["code"] == "invalid_api_key"


def test_it_is_not_in_the_interface_document(scraper):
    assert "/metrics" not in scraper.get("/openapi.json").get_json()["paths"]


def test_requests_are_counted_by_route_template_never_the_raw_path(scraper, tenant):
    before = scrape(scraper)
    unknown = str(uuid.uuid4())
    for _ in range(3):
        assert scraper.get(f"/v1/customers/{unknown}/reward-account",
                           headers=tenant.headers()).status_code == 404
    assert scraper.get(f"/no-such-page-{unknown}").status_code == 404
    assert scraper.get("/health").status_code == 200
    assert scraper.open("/health", method="BREW").status_code == 405

    response = scraper.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    text = response.get_data(as_text=True)
    assert unknown not in text and "BREW" not in text
    after = samples(text)
    route = "/v1/customers/<customer_id>/reward-account"
    assert (requests_counted(after, route, "GET", 404)
            - requests_counted(before, route, "GET", 404)) == 3
    for method, status in (("GET", 404), ("other", 405)):
        assert (requests_counted(after, "unmatched", method, status)
                - requests_counted(before, "unmatched", method, status)) == 1
    count = ("loyalty_http_request_duration_seconds_count", (("route", route),))
    assert after[count] - before.get(count, 0.0) == 3


def test_the_outbox_and_deliveries_are_read_at_scrape_time(scraper, db, tenant):
    endpoints.allow_host(db, "hooks.example.com", now=utcnow())
    endpoints.create_endpoint(db, tenant.company_id, url="https://hooks.example.com/h",
                              events=["*"], description=None, pepper=TEST_PEPPER, now=utcnow())
    record_event(db, tenant.company_id, "customer.created", {"id": "c-1"})
    db.commit()
    delivery.dispatch_pending(db, now=utcnow(), limit=10)
    db.execute(update(WebhookDelivery).values(state="DEAD"))
    for n in (2, 3):
        record_event(db, tenant.company_id, "customer.created", {"id": f"c-{n}"})
    db.commit()

    scraped = scrape(scraper)
    assert scraped[("loyalty_database_up", ())] == 1
    assert scraped[("loyalty_outbox_events_waiting", ())] == 2
    assert scraped[("loyalty_outbox_oldest_waiting_seconds", ())] >= 0
    assert scraped[("loyalty_webhook_deliveries", (("state", "DEAD"),))] == 1
    assert scraped[("loyalty_webhook_deliveries", (("state", "PENDING"),))] == 0
    assert scraped[("loyalty_webhook_dead_letters", ())] == 1
    if db.get_bind().dialect.name == "postgresql":
        in_use = [value for (name, _), value in scraped.items()
                  if name == "loyalty_database_connections"]
        assert sum(in_use) >= 1  # at least the scrape's own connection


def test_a_database_and_redis_that_are_down_still_scrape(settings):
    port = free_port()
    down = create_app(dataclasses.replace(
        settings, metrics_token=TOKEN, redis_url=f"redis://127.0.0.1:{port}/0",
        database_url=f"postgresql+psycopg2://postgres@127.0.0.1:{port}/none"))
    scraped = scrape(down.test_client())
    assert scraped[("loyalty_database_up", ())] == 0
    assert scraped[("loyalty_redis_up", ())] == 0
    assert ("loyalty_outbox_events_waiting", ()) not in scraped


@pytest.mark.redis
def test_the_worker_heartbeat_comes_from_rqs_registry(scraper, settings):
    from redis import Redis
    from rq import Queue, Worker

    redis = Redis.from_url(settings.redis_url)
    worker = Worker([Queue(settings.rq_queue, connection=redis)], connection=redis)
    worker.register_birth()
    try:
        worker.heartbeat()
        scraped = scrape(scraper)
    finally:
        worker.register_death()
    assert scraped[("loyalty_redis_up", ())] == 1
    assert scraped[("loyalty_rq_workers", ())] == 1
    beat = scraped[("loyalty_rq_worker_last_heartbeat_timestamp_seconds", ())]
    assert abs(beat - worker.last_heartbeat.timestamp()) < 1
