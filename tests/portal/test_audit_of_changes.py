"""Every kind of change the API and the operator's commands make is in the audit record, named
by who made it."""
from __future__ import annotations

import pytest

from tests.api.locations_helpers import create_store, create_terminal
from tests.program.helpers import change_program, create_campaign

HOST = "hooks.example.com"


def _actions(client, tenant, **query) -> list[tuple[str, str, str | None]]:
    items = client.get("/v1/audit-events", query_string={"limit": 100, **query},
                       headers=tenant.headers()).get_json()["items"]
    return [(e["action"], e["actor"]["kind"], e["actor"]["name"]) for e in reversed(items)]


def _done(response):
    assert response.status_code < 300, response.get_json()
    return response.get_json(silent=True)


def test_each_change_through_the_api_names_its_key(app, client, tenant):
    app.test_cli_runner().invoke(args=["webhooks", "allow-host", HOST])
    h = tenant.headers
    issued = _done(client.post("/v1/api-credentials", headers=h(),
                               json={"name": "till", "scopes": ["company:read"]}))
    _done(client.post(f"/v1/api-credentials/{issued['id']}/rotate", headers=h(), json={}))
    _done(client.delete(f"/v1/api-credentials/{issued['id']}", headers=h()))
    change_program(client, tenant, accrualPercent="7")
    campaign = create_campaign(client, tenant)
    _done(client.patch(f"/v1/campaigns/{campaign['id']}", json={"name": "Triple"}, headers=h()))
    _done(client.delete(f"/v1/campaigns/{campaign['id']}", headers=h()))
    store = create_store(client, tenant)
    terminal = create_terminal(client, tenant, store["id"])
    _done(client.patch(f"/v1/terminals/{terminal['id']}", json={"name": "Till 9"}, headers=h()))
    endpoint = _done(client.post("/v1/webhook-endpoints", headers=h(),
                                 json={"url": f"https://{HOST}/x", "events": ["*"]}))
    _done(client.post(f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret", headers=h(),
                      json={}))
    _done(client.delete(f"/v1/webhook-endpoints/{endpoint['id']}", headers=h()))
    assert _actions(client, tenant) == [(action, "CREDENTIAL", "all scopes") for action in (
        "credential.issued", "credential.rotated", "credential.revoked", "program.updated",
        "campaign.created", "campaign.updated", "campaign.ended", "store.created",
        "terminal.created", "terminal.updated", "webhook_endpoint.created",
        "webhook_endpoint.secret_rotated", "webhook_endpoint.deleted")]


def test_a_refused_change_leaves_no_record(client, tenant):
    refused = client.post("/v1/api-credentials", headers=tenant.headers(),
                          json={"name": "x", "scopes": ["no:such"]})
    assert refused.status_code == 422
    assert _actions(client, tenant) == []


@pytest.mark.parametrize("command", [
    ["credentials", "issue", "{company}", "--name", "Till 3", "--scopes", "company:read"],
    ["programs", "set", "{company}", "--accrual-percent", "6"],
])
def test_the_operators_commands_are_recorded_as_the_operators(app, client, tenant, command):
    result = app.test_cli_runner().invoke(
        args=[part.format(company=tenant.company_id) for part in command])
    assert result.exit_code == 0, result.output
    [(action, kind, _name)] = _actions(client, tenant)
    assert kind == "OPERATOR" and action.split(".")[0] in ("credential", "program")
