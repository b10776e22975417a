"""What a key may do to other keys: rotate or revoke only keys whose scopes are all its own,
so no key obtains a stronger one (CONTRACT §3); rotations of one key take turns."""
from __future__ import annotations

import threading
import time
from functools import partial

import pytest
from sqlalchemy import select, text

from app.models import ApiCredential

from tests.api.test_auth import _credential_id
from tests.concurrency import raising, run_together

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


def _waiting_on_locks(app) -> int:
    with app.extensions["engine"].connect() as connection:
        return connection.scalar(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"))


@pytest.mark.postgres
def test_concurrent_rotations_of_one_key_take_turns(app, client, tenant, db):
    """Ten rotations at once, each with a grace period: each starts from the key the one
    before it left, so the last key and the one before it (in its grace) both work. Without
    the row lock, rotations would read the same row and the grace keep a key nobody holds."""
    target = tenant.key_with("company:read")
    target_id = _credential_id(client, tenant, target)
    clients = [app.test_client() for _ in range(10)]

    def rotate(one_client):
        response = one_client.post(f"/v1/api-credentials/{target_id}/rotate",
                                   headers=tenant.headers(), json={"gracePeriodSeconds": 600})
        return response.status_code, response.get_json().get("key")

    # The test holds the row until all ten wait on it, so they truly overlap.
    db.execute(select(ApiCredential).where(ApiCredential.id == target_id).with_for_update())
    answers: list = []
    rotations = threading.Thread(target=lambda: answers.extend(
        run_together([partial(rotate, c) for c in clients])))
    rotations.start()
    while _waiting_on_locks(app) < 10 and rotations.is_alive():
        time.sleep(0.01)
    db.commit()
    rotations.join()

    assert [status for status, _ in raising(answers)] == [201] * 10
    keys = [key for _, key in answers]
    assert len(set(keys)) == 10
    working = [key for key in keys
               if client.get("/v1/company", headers=tenant.headers(key=key)).status_code == 200]
    assert len(working) == 2
    assert client.get("/v1/company", headers=tenant.headers(key=target)).status_code == 401
