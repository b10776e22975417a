"""Webhooks in the portal: endpoints registered (the secret shown once), their secret rotated
with a grace, deleted — the API's schemas, services and messages; the latest deliveries; dead
letters sent again; the audit; the roles; only the company's own."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import AuditEvent, WebhookDelivery, WebhookEndpoint
from app.services.webhooks.endpoints import decrypt_secret
from tests.conftest import TEST_PEPPER
from tests.portal.conftest import signed_in_member
from tests.portal.helpers import HOOK_HOST, dead_letter, post_form, table

PAGE = "/portal/webhooks"
_SECRET = re.compile(r'<code class="link" id="new-secret">([^<]+)</code>')


@pytest.fixture
def allowed(app):
    assert app.test_cli_runner().invoke(args=["webhooks", "allow-host", HOOK_HOST]).exit_code == 0


def _in_english(member):
    """The member's choice of English, kept on the member: messages flashed by a change too."""
    assert post_form(member, PAGE, "/portal/language", {"language": "en"}).status_code == 303
    return member


def _shown_secret(answer) -> str:
    found = _SECRET.search(answer.get_data(as_text=True))
    assert found, answer.get_data(as_text=True)[:300]
    return found.group(1)


def _api_endpoints(client, tenant) -> list[dict]:
    return client.get("/v1/webhook-endpoints", headers=tenant.headers()).get_json()["items"]


def _stored(db, endpoint_id) -> WebhookEndpoint:
    db.expire_all()
    return db.scalar(select(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id))


def _staff_actions(db, company_id) -> list[str]:
    db.expire_all()
    return sorted(db.scalars(select(AuditEvent.action).where(
        AuditEvent.company_id == company_id, AuditEvent.actor_kind == "STAFF",
        AuditEvent.action != "staff.signed_in")))


def _register(member, url=f"https://{HOOK_HOST}/in", **form):
    return post_form(member, PAGE, PAGE, {"url": url, "events": ["customer.created",
                                                                 "sale.returned"], **form})


def test_an_endpoint_registered_rotated_and_deleted(owner, client, tenant, db, allowed):
    registered = _register(owner, description="CRM")
    assert registered.status_code == 201
    secret = _shown_secret(registered)
    [endpoint] = _api_endpoints(client, tenant)
    assert (endpoint["url"], endpoint["events"], endpoint["description"]) == (
        f"https://{HOOK_HOST}/in", ["customer.created", "sale.returned"], "CRM")
    assert decrypt_secret(TEST_PEPPER, _stored(db, endpoint["id"]).secret_encrypted) == secret
    assert secret not in owner.get(PAGE).get_data(as_text=True)  # shown once

    path = f"{PAGE}/{endpoint['id']}"
    rotated = post_form(owner, PAGE, f"{path}/rotate-secret", {"gracePeriodSeconds": "600"})
    assert rotated.status_code == 201
    new_secret = _shown_secret(rotated)
    stored = _stored(db, endpoint["id"])
    assert new_secret != secret
    assert decrypt_secret(TEST_PEPPER, stored.secret_encrypted) == new_secret
    assert decrypt_secret(TEST_PEPPER, stored.previous_secret_encrypted) == secret
    assert timedelta(seconds=590) < stored.previous_secret_valid_until - utcnow() \
        <= timedelta(seconds=600)

    refused = post_form(owner, PAGE, f"{path}/rotate-secret", {"gracePeriodSeconds": "1 week"})
    assert refused.status_code == 422
    assert "gracePeriodSeconds: " in refused.get_data(as_text=True)
    assert decrypt_secret(TEST_PEPPER, _stored(db, endpoint["id"]).secret_encrypted) == new_secret

    deleted = post_form(owner, PAGE, f"{path}/delete", {})
    assert deleted.status_code == 303 and deleted.headers["Location"] == PAGE
    assert _api_endpoints(client, tenant) == []
    assert post_form(owner, PAGE, f"{path}/delete", {}).status_code == 404
    # The refused rotation left no record.
    assert _staff_actions(db, tenant.company_id) == [
        "webhook_endpoint.created", "webhook_endpoint.deleted", "webhook_endpoint.secret_rotated"]


@pytest.mark.parametrize("form, message", [
    ({"url": f"http://{HOOK_HOST}/in"}, "url: the url must start with https://"),
    ({"url": "https://elsewhere.example.org/in"},
     "url: the host elsewhere.example.org is not allowed for webhooks"),
    ({"url": f"https://{HOOK_HOST}/in", "events": []}, "events: "),
    ({"url": f"https://{HOOK_HOST}/in", "events": ["*", "sale.returned"]},
     "&#34;*&#34; stands alone"),
    ({"url": f"https://{HOOK_HOST}/in", "events": ["no.such"]}, "events."),
])
def test_a_refused_endpoint_shows_why_in_the_form(owner, client, tenant, db, allowed, form,
                                                  message):
    answer = _register(owner, **form)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 422 and message in html, html[html.find("error-summary"):][:400]
    assert f'value="{form["url"]}"' in html  # the form as it was sent, to correct
    assert 'id="new-secret"' not in html
    assert _api_endpoints(client, tenant) == []
    assert _staff_actions(db, tenant.company_id) == []


def test_deliveries_shown_and_a_dead_letter_sent_again(app, owner, tenant, db):
    event_id, delivery_id = dead_letter(app, tenant.company_id)
    page = _in_english(owner).get(PAGE)
    [_, letter] = table(page, "dead-letters")
    assert letter[0].startswith("customer.created") and letter[0].endswith(event_id)
    assert letter[1:4] == [f"https://{HOOK_HOST}/dead", "1", "HTTP 500"]
    [_, line] = table(page, "deliveries")
    assert line[1:7] == ["customer.created", f"https://{HOOK_HOST}/dead", "dead", "1",
                         "HTTP 500", "—"]

    replayed = post_form(owner, PAGE, f"{PAGE}/events/{event_id}/replay", {})
    assert replayed.status_code == 303 and replayed.headers["Location"] == PAGE
    db.expire_all()
    row = db.scalar(select(WebhookDelivery).where(WebhookDelivery.id == delivery_id))
    assert (row.state, row.attempts, row.last_status, row.last_error) == ("PENDING", 0, None,
                                                                          None)
    page = owner.get(PAGE)
    html = page.get_data(as_text=True)
    assert "Sent again, with a fresh retry schedule: 1." in html
    assert 'id="dead-letters"' not in html and "No dead letters." in html
    assert table(page, "deliveries")[1][3:5] == ["waiting", "0"]
    assert _staff_actions(db, tenant.company_id) == ["webhook_event.replayed"]
    # Nothing dead is left of it: a second replay finds nothing.
    assert post_form(owner, PAGE, f"{PAGE}/events/{event_id}/replay", {}).status_code == 404


def test_a_dead_letter_of_a_deleted_endpoint_stays_dead(app, owner, client, tenant, db):
    event_id, delivery_id = dead_letter(app, tenant.company_id)
    [endpoint] = _api_endpoints(client, tenant)
    _in_english(owner)
    assert post_form(owner, PAGE, f"{PAGE}/{endpoint['id']}/delete", {}).status_code == 303
    replayed = post_form(owner, PAGE, f"{PAGE}/events/{event_id}/replay", {})
    assert replayed.status_code == 303
    assert "disabled or deleted: 1." in owner.get(PAGE).get_data(as_text=True)
    db.expire_all()
    assert db.scalar(select(WebhookDelivery.state).where(WebhookDelivery.id == delivery_id)) \
        == "DEAD"
    assert _staff_actions(db, tenant.company_id) == ["webhook_endpoint.deleted"]


def test_another_companys_ids_are_not_found(app, owner, client, tenant, other_tenant, db,
                                            allowed):
    event_id, delivery_id = dead_letter(app, other_tenant.company_id, path="/theirs")
    [theirs] = _api_endpoints(client, other_tenant)
    path = f"{PAGE}/{theirs['id']}"
    assert post_form(owner, PAGE, f"{path}/rotate-secret", {}).status_code == 404
    assert post_form(owner, PAGE, f"{path}/delete", {}).status_code == 404
    assert post_form(owner, PAGE, f"{PAGE}/events/{event_id}/replay", {}).status_code == 404
    assert _api_endpoints(client, other_tenant) == [theirs]
    db.expire_all()
    assert db.scalar(select(WebhookDelivery.state).where(WebhookDelivery.id == delivery_id)) \
        == "DEAD"
    html = owner.get(PAGE).get_data(as_text=True)
    assert event_id not in html and "/theirs" not in html
    assert _staff_actions(db, tenant.company_id) == []


def test_the_page_is_owners_and_managers(app, owner, manager, tenant, db):
    event_id, delivery_id = dead_letter(app, tenant.company_id)
    assert 'href="/portal/webhooks"' in owner.get("/portal/").get_data(as_text=True)
    assert manager.get(PAGE).status_code == 200
    for role in ("accountant", "support"):
        member = signed_in_member(app, tenant, role, role.title())
        assert member.get(PAGE).status_code == 403
        assert 'href="/portal/webhooks"' not in member.get("/portal/customers").get_data(
            as_text=True)
        refused = post_form(member, "/portal/customers", f"{PAGE}/events/{event_id}/replay", {})
        assert refused.status_code == 403
        refused = post_form(member, "/portal/customers", PAGE,
                            {"url": f"https://{HOOK_HOST}/in", "events": ["*"]})
        assert refused.status_code == 403
    db.expire_all()
    assert db.scalar(select(WebhookDelivery.state).where(WebhookDelivery.id == delivery_id)) \
        == "DEAD"
    assert len(db.scalars(select(WebhookEndpoint.id)).all()) == 1


def test_a_form_without_its_token_changes_nothing(app, owner, tenant, db):
    event_id, delivery_id = dead_letter(app, tenant.company_id)
    assert owner.post(f"{PAGE}/events/{event_id}/replay").status_code == 400
    db.expire_all()
    assert db.scalar(select(WebhookDelivery.state).where(WebhookDelivery.id == delivery_id)) \
        == "DEAD"


def test_a_replay_is_handed_to_the_worker_after_its_commit(app, owner, tenant, monkeypatch):
    from redis.exceptions import ConnectionError as RedisAway

    from app.portal import webhooks as page

    event_id, delivery_id = dead_letter(app, tenant.company_id)
    handed = []

    def enqueue(settings, ids):
        session = app.extensions["session_factory"]()  # another connection: the committed state
        try:
            handed.append([(company, session.scalar(select(WebhookDelivery.state).where(
                WebhookDelivery.id == delivery)), delivery) for company, delivery in ids])
        finally:
            session.close()
        raise RedisAway("Redis is away")  # the worker's sweep sends it then

    monkeypatch.setattr(page, "enqueue_deliveries", enqueue)
    replayed = post_form(owner, PAGE, f"{PAGE}/events/{event_id}/replay", {})
    assert replayed.status_code == 303
    assert handed == [[(tenant.company_id, "PENDING", delivery_id)]]
