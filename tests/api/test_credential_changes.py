"""What a key may do to other keys: rotate or revoke only keys whose scopes are all its own,
so no key obtains a stronger one (docs/api.md#keys). Rotations of one key, taking turns:
tests/api/test_key_rotations.py."""
from __future__ import annotations

from tests.api.test_auth import _credential_id

KEY_KEEPER = ("credentials:read", "credentials:write")


def _works(client, tenant, key) -> bool:
    return client.get("/v1/api-credentials", headers=tenant.headers(key=key)).status_code == 200


def _refused(response, scope_named: str):
    assert response.status_code == 403, response.get_json()
    assert response.get_json()["code"] == "insufficient_scope"
    assert scope_named in response.headers["WWW-Authenticate"]


def test_a_key_cannot_rotate_or_revoke_a_stronger_key(client, tenant):
    keeper = tenant.key_with(*KEY_KEEPER)
    owner = _credential_id(client, tenant, tenant.key)  # every scope

    rotated = client.post(f"/v1/api-credentials/{owner}/rotate", headers=tenant.headers(key=keeper),
                          json={"gracePeriodSeconds": 86400})
    _refused(rotated, "ledger:write")
    assert "key" not in rotated.get_json()
    _refused(client.delete(f"/v1/api-credentials/{owner}", headers=tenant.headers(key=keeper)),
             "ledger:write")
    # Nothing changed: the owner's key is the one it was, and still works.
    listed = {c["id"]: c for c in client.get("/v1/api-credentials", headers=tenant.headers())
              .get_json()["items"]}
    assert listed[owner]["prefix"] == tenant.key[:16] and listed[owner]["revokedAt"] is None


def test_one_scope_more_is_enough_to_be_refused(client, tenant):
    keeper = tenant.key_with(*KEY_KEEPER)
    wider = tenant.key_with(*KEY_KEEPER, "company:read")
    wider_id = _credential_id(client, tenant, wider)
    response = client.post(f"/v1/api-credentials/{wider_id}/rotate", headers=tenant.headers(key=keeper),
                           json={})
    _refused(response, 'scope="company:read"')
    assert _works(client, tenant, wider)


def test_a_key_may_rotate_and_revoke_itself_and_weaker_keys(client, tenant):
    keeper = tenant.key_with(*KEY_KEEPER)
    weaker = tenant.key_with("credentials:read")
    weaker_id = _credential_id(client, tenant, weaker)
    rotated = client.post(f"/v1/api-credentials/{weaker_id}/rotate",
                          headers=tenant.headers(key=keeper), json={})
    assert rotated.status_code == 201
    assert _works(client, tenant, rotated.get_json()["key"]) and not _works(client, tenant, weaker)
    assert client.delete(f"/v1/api-credentials/{weaker_id}",
                         headers=tenant.headers(key=keeper)).status_code == 204

    own_id = _credential_id(client, tenant, keeper)
    itself = client.post(f"/v1/api-credentials/{own_id}/rotate", headers=tenant.headers(key=keeper),
                         json={})
    assert itself.status_code == 201
    renewed = itself.get_json()["key"]
    assert _works(client, tenant, renewed) and not _works(client, tenant, keeper)
    assert client.delete(f"/v1/api-credentials/{own_id}",
                         headers=tenant.headers(key=renewed)).status_code == 204
    assert not _works(client, tenant, renewed)


def test_the_operator_may_rotate_any_key(app, client, tenant):
    owner = _credential_id(client, tenant, tenant.key)
    result = app.test_cli_runner().invoke(args=["credentials", "rotate", owner])
    assert result.exit_code == 0, result.output
    assert _works(client, tenant, result.output.splitlines()[-1])
    assert not _works(client, tenant, tenant.key)
