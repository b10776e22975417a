"""Webhook endpoints through the API: register, list, delete; scopes, the allow-list, the secret."""
import base64

import pytest
from sqlalchemy import select

from app.models import WebhookEndpoint
from app.services.webhooks import endpoints
from app.services.webhooks.outbox import EVENT_TYPES
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
