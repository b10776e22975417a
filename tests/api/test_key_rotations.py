"""Every key a rotation replaces keeps working until its own grace ends, however many
rotations follow: up to 10 at once per credential, an 11th ending the oldest; revocation ends
them all (docs/api.md#keys). A grace is ended here by moving its end into the past."""
from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy import func, select

from app.models import ApiCredential, PreviousKey
from app.services.tenancy import keys

from tests.api.locations_helpers import create_store, create_terminal
from tests.api.test_auth import _credential_id, end_grace
from tests.concurrency import raising, run_behind_a_row_lock
from tests.conftest import TEST_PEPPER
from worker.periodic import run_periodic_tasks

HOUR = 3600


def _works(client, tenant, key: str, **headers) -> bool:
    status = client.get("/v1/company", headers=tenant.headers(key=key, **headers)).status_code
    assert status in (200, 401), status
    return status == 200


def _rotate(client, tenant, credential_id: str, grace: int | None = HOUR) -> str:
    response = client.post(f"/v1/api-credentials/{credential_id}/rotate", headers=tenant.headers(),
                           json={} if grace is None else {"gracePeriodSeconds": grace})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["key"]


def _rotation_chain(client, tenant, rotations: int) -> tuple[str, list[str]]:
    """A key and the keys `rotations` rotations with an hour's grace gave, oldest first."""
    first = tenant.key_with("company:read")
    credential_id = _credential_id(client, tenant, first)
    chain = [first]
    for _ in range(rotations):
        chain.append(_rotate(client, tenant, credential_id))
    return credential_id, chain


def test_every_replaced_key_works_until_its_own_grace_ends(client, tenant, db):
    _, (k0, k1, k2) = _rotation_chain(client, tenant, 2)
    assert [_works(client, tenant, key) for key in (k0, k1, k2)] == [True, True, True]

    end_grace(db, k0)
    assert [_works(client, tenant, key) for key in (k0, k1, k2)] == [False, True, True]
    end_grace(db, k1)
    assert [_works(client, tenant, key) for key in (k0, k1, k2)] == [False, False, True]


def test_a_replaced_key_at_a_register_works_until_its_grace_ends(client, tenant, db):
    terminal = create_terminal(client, tenant, create_store(client, tenant)["id"],
                               posKey="register-1")
    _, (k0, k1, k2) = _rotation_chain(client, tenant, 2)
    at_register = {"X-Loyalty-Pos-Key": terminal["posKey"]}
    assert all(_works(client, tenant, key, **at_register) for key in (k0, k1, k2))
    end_grace(db, k0)
    assert not _works(client, tenant, k0, **at_register)
    assert _works(client, tenant, k1, **at_register)


def test_an_eleventh_replaced_key_ends_the_oldest(client, tenant, db):
    credential_id, chain = _rotation_chain(client, tenant, 10)
    assert all(_works(client, tenant, key) for key in chain)  # ten replaced, all in their grace

    chain.append(_rotate(client, tenant, credential_id))
    assert [_works(client, tenant, key) for key in chain] == [False] + [True] * 11
    assert db.scalar(select(func.count()).select_from(PreviousKey)
                     .where(PreviousKey.credential_id == credential_id)) == 10


def test_a_rotation_without_grace_ends_only_the_key_it_replaces(client, tenant):
    credential_id, (k0, k1) = _rotation_chain(client, tenant, 1)
    k2 = _rotate(client, tenant, credential_id, grace=None)
    assert [_works(client, tenant, key) for key in (k0, k1, k2)] == [True, False, True]


def test_a_rotation_forgets_the_replaced_keys_whose_grace_ended(client, tenant, db):
    credential_id, (k0, k1, k2) = _rotation_chain(client, tenant, 2)
    end_grace(db, k0)
    _rotate(client, tenant, credential_id)
    kept = set(db.scalars(select(PreviousKey.key_digest)
                          .where(PreviousKey.credential_id == credential_id)))
    assert kept == {keys.key_digest(TEST_PEPPER, key) for key in (k1, k2)}


def test_the_periodic_upkeep_forgets_the_replaced_keys_whose_grace_ended(app, client, tenant,
                                                                         db):
    credential_id, (k0, k1, _) = _rotation_chain(client, tenant, 2)
    end_grace(db, k0)
    assert run_periodic_tasks(app)["purge ended replaced keys"] >= 1
    db.expire_all()
    kept = set(db.scalars(select(PreviousKey.key_digest)
                          .where(PreviousKey.credential_id == credential_id)))
    assert kept == {keys.key_digest(TEST_PEPPER, k1)}
    assert not _works(client, tenant, k0) and _works(client, tenant, k1)


def test_revocation_ends_every_replaced_key(client, tenant, db):
    credential_id, chain = _rotation_chain(client, tenant, 3)
    response = client.delete(f"/v1/api-credentials/{credential_id}", headers=tenant.headers())
    assert response.status_code == 204
    assert not any(_works(client, tenant, key) for key in chain)
    assert db.scalar(select(func.count()).select_from(PreviousKey)
                     .where(PreviousKey.credential_id == credential_id)) == 0


def test_the_operators_rotation_keeps_every_replaced_key_too(app, client, tenant, db):
    k0 = tenant.key_with("company:read")
    credential_id = _credential_id(client, tenant, k0)
    cli = app.test_cli_runner()

    def rotate(*options):
        result = cli.invoke(args=["credentials", "rotate", credential_id, *options])
        assert result.exit_code == 0, result.output
        return result.output.splitlines()[-1]

    k1 = rotate("--grace-seconds", str(HOUR))
    k2 = rotate("--grace-seconds", str(HOUR))
    assert [_works(client, tenant, key) for key in (k0, k1, k2)] == [True, True, True]
    end_grace(db, k0)
    assert [_works(client, tenant, key) for key in (k0, k1, k2)] == [False, True, True]
    k3 = rotate()
    assert [_works(client, tenant, key) for key in (k1, k2, k3)] == [True, False, True]

    result = cli.invoke(args=["credentials", "revoke", credential_id])
    assert result.exit_code == 0, result.output
    assert not any(_works(client, tenant, key) for key in (k0, k1, k2, k3))


@pytest.mark.postgres
def test_concurrent_rotations_each_hand_over_a_key_that_lives_its_grace(app, client, tenant, db):
    """Five rotations at once, each with a grace: they take turns on the credential's row,
    so each replaces the key the one before it handed over. Every key works: the last as the
    credential's key, the others (and the first key) until their graces end; then only the
    last. Rotations that read the same key would each keep it, and hand over keys that die
    with the next rotation."""
    target = tenant.key_with("company:read")
    target_id = _credential_id(client, tenant, target)
    clients = [app.test_client() for _ in range(5)]

    def rotate(one_client):
        response = one_client.post(f"/v1/api-credentials/{target_id}/rotate",
                                   headers=tenant.headers(), json={"gracePeriodSeconds": HOUR})
        return response.status_code, response.get_json().get("key")

    answers = run_behind_a_row_lock(
        app, db, select(ApiCredential).where(ApiCredential.id == target_id).with_for_update(),
        [partial(rotate, c) for c in clients])

    assert [status for status, _ in raising(answers)] == [201] * 5
    handed_over = [key for _, key in answers]
    assert len(set(handed_over)) == 5
    assert all(_works(client, tenant, key) for key in [target, *handed_over])

    replaced = [key for key in [target, *handed_over] if db.scalar(
        select(PreviousKey.key_digest)
        .where(PreviousKey.key_digest == keys.key_digest(TEST_PEPPER, key)))]
    assert len(replaced) == 5 and target in replaced  # each key but the last, once
    for key in replaced:
        end_grace(db, key)
    last = [key for key in handed_over if _works(client, tenant, key)]
    assert len(last) == 1 and last[0][:16] == _prefix(client, tenant, target_id)
    assert not _works(client, tenant, target)


def _prefix(client, tenant, credential_id: str) -> str:
    items = client.get("/v1/api-credentials", headers=tenant.headers()).get_json()["items"]
    return next(item["prefix"] for item in items if item["id"] == credential_id)
