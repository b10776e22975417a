"""Webhook endpoints through the API: register, list, delete, rotate the secret; scopes, the
allow-list, the secret."""
import base64
from datetime import timedelta
from functools import partial

import pytest
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import WebhookEndpoint
from app.services.webhooks import endpoints
from app.services.webhooks.outbox import EVENT_TYPES
from tests.concurrency import raising, run_behind_a_row_lock
from tests.conftest import TEST_PEPPER

HOST = "hooks.example.com"
URL = f"https://{HOST}/loyalty"


@pytest.fixture
def allowed(app):
    app.test_cli_runner().invoke(args=["webhooks", "allow-host", HOST])


def create(client, tenant, key=None, **body):
    body = {"url": URL, "events": ["*"], **body}
    return client.post("/v1/webhook-endpoints", json=body, headers=tenant.headers(key))


def test_create_shows_the_secret_once_and_keeps_it_encrypted(client, tenant, db, allowed):
    response = create(client, tenant, description="accounting",
                      events=["sale.committed", "customer.created", "sale.committed"])

    assert response.status_code == 201
    body = response.get_json()
    assert body["url"] == URL and body["description"] == "accounting"
    assert body["events"] == ["sale.committed", "customer.created"]
    assert (body["state"], body["disabledAt"]) == ("ACTIVE", None)
    assert body["createdAt"].endswith("Z")
    secret = body["secret"]
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:], validate=True)) == 32

    listed = client.get("/v1/webhook-endpoints", headers=tenant.headers()).get_json()["items"]
    assert [item["id"] for item in listed] == [body["id"]]
    assert "secret" not in listed[0] and secret[6:] not in str(listed)

    stored = db.scalar(select(WebhookEndpoint))
    assert secret[6:] not in stored.secret_encrypted
    assert endpoints.decrypt_secret(TEST_PEPPER, stored.secret_encrypted) == secret
    with pytest.raises(Exception):
        endpoints.decrypt_secret("another-pepper", stored.secret_encrypted)


def test_every_event_name_and_star_are_accepted(client, tenant, allowed):
    assert create(client, tenant, events=list(EVENT_TYPES)).status_code == 201
    assert create(client, tenant, events=["*"]).get_json()["events"] == ["*"]


@pytest.mark.parametrize("url, message", [
    (f"http://{HOST}/loyalty", "https://"),
    ("https://unlisted.example.com/loyalty", "not allowed"),
    (f"https://sub.{HOST}/loyalty", "not allowed"),
    (f"https://user:pass@{HOST}/loyalty", "user name"),
    (f"https://{HOST}:99999/loyalty", "not a valid url"),
    ("https:///loyalty", "host"),
    (f"https://{HOST}/a b", "spaces"),
    (f"https://{HOST}/\x00", "control"),
    (f"ftp://{HOST}/", "https://"),
])
def test_only_https_on_an_allowed_host(client, tenant, allowed, url, message):
    response = create(client, tenant, url=url)

    assert response.status_code == 422
    [item] = response.get_json()["detail"]
    assert item["loc"] == ["body", "url"] and message in item["msg"]


def test_host_matching_ignores_case_port_and_trailing_dot(client, tenant, allowed):
    assert create(client, tenant, url="https://HOOKS.Example.com.:8443/x").status_code == 201


def test_host_allowed_after_a_refusal(app, client, tenant):
    assert create(client, tenant).status_code == 422
    app.test_cli_runner().invoke(args=["webhooks", "allow-host", HOST])
    assert create(client, tenant).status_code == 201


@pytest.mark.parametrize("body, loc", [
    ({"events": ["nope"]}, ["body", "events", 0]),
    ({"events": []}, ["body", "events"]),
    ({"events": ["*", "sale.committed"]}, ["body", "events"]),
    ({"events": None}, ["body", "events"]),
    ({"description": "x" * 501}, ["body", "description"]),
    ({"description": "nul \x00"}, ["body", "description"]),
    ({"secret": "whsec_mine"}, ["body", "secret"]),
    ({"companyId": "someone-else"}, ["body", "companyId"]),
])
def test_invalid_bodies(client, tenant, allowed, body, loc):
    response = create(client, tenant, **body)

    assert response.status_code == 422
    assert loc in [item["loc"] for item in response.get_json()["detail"]]


def test_required_fields(client, tenant, allowed):
    response = client.post("/v1/webhook-endpoints", json={}, headers=tenant.headers())

    assert response.status_code == 422
    locs = {tuple(item["loc"]) for item in response.get_json()["detail"]}
    assert locs == {("body", "url"), ("body", "events")}


def test_scopes(client, tenant, allowed):
    reader = tenant.key_with("webhooks:read")
    writer = tenant.key_with("webhooks:write")

    assert create(client, tenant, key=reader).status_code == 403
    assert create(client, tenant, key=reader).get_json()["code"] == "insufficient_scope"
    created = create(client, tenant, key=writer)
    assert created.status_code == 201
    assert client.get("/v1/webhook-endpoints", headers=tenant.headers(writer)).status_code == 403
    assert client.get("/v1/webhook-endpoints", headers=tenant.headers(reader)).status_code == 200
    path = f"/v1/webhook-endpoints/{created.get_json()['id']}"
    assert client.delete(path, headers=tenant.headers(reader)).status_code == 403
    assert client.delete(path, headers=tenant.headers(writer)).status_code == 204
    assert client.get("/v1/webhook-endpoints").status_code == 401


def test_delete_and_isolation(client, tenant, other_tenant, allowed):
    mine = create(client, tenant).get_json()["id"]
    theirs = create(client, other_tenant).get_json()["id"]

    def delete(endpoint_id):
        return client.delete(f"/v1/webhook-endpoints/{endpoint_id}", headers=tenant.headers())

    assert delete(theirs).status_code == 404
    assert delete("not-a-uuid").status_code == 404
    assert delete(mine).status_code == 204
    again = delete(mine)
    assert again.status_code == 404 and again.get_json()["code"] == "not_found"

    assert client.get("/v1/webhook-endpoints", headers=tenant.headers()).get_json() == {"items": []}
    listed = client.get("/v1/webhook-endpoints", headers=other_tenant.headers())
    [other] = listed.get_json()["items"]
    assert other["id"] == theirs


def test_interface_document(client):
    paths = client.get("/openapi.json").get_json()["paths"]

    post = paths["/v1/webhook-endpoints"]["post"]
    assert post["x-scope"] == "webhooks:write"
    assert post["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "IssuedWebhookEndpointResponse")
    assert paths["/v1/webhook-endpoints"]["get"]["x-scope"] == "webhooks:read"
    assert paths["/v1/webhook-endpoints/{endpoint_id}"]["delete"]["x-scope"] == "webhooks:write"
    rotation = paths["/v1/webhook-endpoints/{endpoint_id}/rotate-secret"]["post"]
    assert (rotation["operationId"], rotation["x-scope"]) == ("rotateWebhookEndpointSecret",
                                                              "webhooks:write")
    assert rotation["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "IssuedWebhookEndpointResponse")



# --- rotating the secret (docs/api.md#webhooks) ---------------------------------------------------

def rotate(client, tenant, endpoint_id, body=None, key=None, **headers):
    return client.post(f"/v1/webhook-endpoints/{endpoint_id}/rotate-secret", json=body,
                       headers=tenant.headers(key, **headers))


def stored_secrets(db, endpoint_id):
    """The endpoint's secret and the one its last rotation replaced (with its end), decrypted."""
    db.expire_all()
    stored = db.scalar(select(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id))
    previous = stored.previous_secret_encrypted
    return (endpoints.decrypt_secret(TEST_PEPPER, stored.secret_encrypted),
            previous and endpoints.decrypt_secret(TEST_PEPPER, previous),
            stored.previous_secret_valid_until)


def test_rotation_shows_the_new_secret_once_and_keeps_the_old_for_a_day(client, tenant, db,
                                                                      allowed):
    created = create(client, tenant, description="accounting").get_json()
    before = utcnow()

    response = rotate(client, tenant, created["id"])

    assert response.status_code == 201
    body = response.get_json()
    secret = body.pop("secret")
    assert body == {key: value for key, value in created.items() if key != "secret"}
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:], validate=True)) == 32
    assert secret != created["secret"]
    listed = client.get("/v1/webhook-endpoints", headers=tenant.headers()).get_json()
    assert secret[6:] not in str(listed) and created["secret"][6:] not in str(listed)
    current, previous, valid_until = stored_secrets(db, created["id"])
    assert (current, previous) == (secret, created["secret"])
    assert before + timedelta(days=1) <= valid_until <= utcnow() + timedelta(days=1)


@pytest.mark.parametrize("grace", [0, 1, 604800])
def test_rotation_grace_bounds_are_accepted(client, tenant, db, allowed, grace):
    created = create(client, tenant).get_json()

    response = rotate(client, tenant, created["id"], {"gracePeriodSeconds": grace})

    assert response.status_code == 201
    current, previous, valid_until = stored_secrets(db, created["id"])
    assert current == response.get_json()["secret"]
    # No grace, nothing kept: the old secret signs nothing from now on.
    assert (previous is None) is (grace == 0) and (valid_until is None) is (grace == 0)


def test_a_second_rotation_keeps_only_the_secret_it_replaces(client, tenant, db, allowed):
    endpoint_id = create(client, tenant).get_json()["id"]
    first = rotate(client, tenant, endpoint_id).get_json()["secret"]
    second = rotate(client, tenant, endpoint_id, {"gracePeriodSeconds": 60}).get_json()["secret"]

    current, previous, valid_until = stored_secrets(db, endpoint_id)
    assert (current, previous) == (second, first)
    assert valid_until <= utcnow() + timedelta(seconds=60)


@pytest.mark.postgres
def test_concurrent_rotations_of_one_endpoint_take_turns(app, client, tenant, db, allowed):
    """Five rotations at once: each replaces the secret the one before it showed, so the secret
    kept for the grace is one a caller holds. Without the row lock each would read the first
    secret and the grace would keep that one, which the receiver may already have dropped."""
    created = create(client, tenant).get_json()
    clients = [app.test_client() for _ in range(5)]

    def rotate_with(one_client):
        response = rotate(one_client, tenant, created["id"])
        return response.status_code, response.get_json().get("secret")

    answers = run_behind_a_row_lock(
        app, db, select(WebhookEndpoint).where(WebhookEndpoint.id == created["id"])
        .with_for_update(), [partial(rotate_with, c) for c in clients])

    assert [status for status, _ in raising(answers)] == [201] * 5
    shown = [secret for _, secret in answers]
    current, previous, _ = stored_secrets(db, created["id"])
    assert len(set(shown)) == 5 and current in shown and previous in shown
    assert previous != current


@pytest.mark.parametrize("body, loc", [
    ({"gracePeriodSeconds": -1}, ["body", "gracePeriodSeconds"]),
    ({"gracePeriodSeconds": 604801}, ["body", "gracePeriodSeconds"]),
    ({"gracePeriodSeconds": "60"}, ["body", "gracePeriodSeconds"]),
    ({"gracePeriodSeconds": 1.5}, ["body", "gracePeriodSeconds"]),
    ({"gracePeriodSeconds": None}, ["body", "gracePeriodSeconds"]),
    ({"gracePeriodSeconds": 10 ** 30}, ["body", "gracePeriodSeconds"]),
    ({"secret": "whsec_mine"}, ["body", "secret"]),
])
def test_rotation_refuses_bad_bodies_and_changes_nothing(client, tenant, db, allowed, body, loc):
    created = create(client, tenant).get_json()

    response = rotate(client, tenant, created["id"], body)

    assert response.status_code == 422
    assert loc in [item["loc"] for item in response.get_json()["detail"]]
    assert stored_secrets(db, created["id"]) == (created["secret"], None, None)


def test_rotation_refuses_an_idempotency_key(client, tenant, db, allowed):
    created = create(client, tenant).get_json()

    response = rotate(client, tenant, created["id"], Idempotency_Key="rotate-1")

    assert response.status_code == 422
    [item] = response.get_json()["detail"]
    assert (item["loc"], item["type"]) == (["header", "Idempotency-Key"],
                                           "idempotency_key_not_supported")
    assert stored_secrets(db, created["id"]) == (created["secret"], None, None)


def test_rotation_scope(client, tenant, db, allowed):
    created = create(client, tenant).get_json()
    reader = tenant.key_with("webhooks:read")

    refused = rotate(client, tenant, created["id"], key=reader)

    assert refused.status_code == 403 and refused.get_json()["code"] == "insufficient_scope"
    assert stored_secrets(db, created["id"]) == (created["secret"], None, None)
    writer = tenant.key_with("webhooks:write")
    assert rotate(client, tenant, created["id"], key=writer).status_code == 201
    assert client.post(f"/v1/webhook-endpoints/{created['id']}/rotate-secret").status_code == 401


def test_rotation_of_another_companys_or_a_deleted_endpoint_is_not_found(
        client, tenant, other_tenant, db, allowed):
    theirs = create(client, other_tenant).get_json()
    deleted = create(client, tenant).get_json()["id"]
    assert client.delete(f"/v1/webhook-endpoints/{deleted}",
                         headers=tenant.headers()).status_code == 204

    for endpoint_id in (theirs["id"], deleted, "not-a-uuid"):
        response = rotate(client, tenant, endpoint_id)
        assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    assert stored_secrets(db, theirs["id"]) == (theirs["secret"], None, None)
