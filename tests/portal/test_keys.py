"""API keys in the portal: issued (shown once) and used, rotated with a grace, revoked; the
owner's only; another company's key is not found."""
from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.models import AuditEvent
from tests.portal.helpers import post_form

PAGE = "/portal/keys"
_KEY = re.compile(r'<code class="link" id="new-key">([^<]+)</code>')


def _shown_key(answer) -> str:
    found = _KEY.search(answer.get_data(as_text=True))
    assert found, answer.get_data(as_text=True)[:300]
    return found.group(1)


def _works(client, key) -> int:
    return client.get("/v1/program", headers={"Authorization": f"Bearer {key}"}).status_code


def _credential_id(client, tenant, name) -> str:
    items = client.get("/v1/api-credentials", headers=tenant.headers()).get_json()["items"]
    return next(item["id"] for item in items if item["name"] == name)


def test_a_key_issued_used_rotated_and_revoked(owner, client, tenant, db):
    issued = post_form(owner, PAGE, PAGE, {"name": "Till sync", "scopes": ["program:read"]})
    assert issued.status_code == 201
    key = _shown_key(issued)
    assert _works(client, key) == 200
    assert key not in owner.get(PAGE).get_data(as_text=True)  # shown once
    credential = _credential_id(client, tenant, "Till sync")

    rotated = post_form(owner, PAGE, f"{PAGE}/{credential}/rotate", {"gracePeriodSeconds": "600"})
    new_key = _shown_key(rotated)
    assert new_key != key and _works(client, new_key) == 200 and _works(client, key) == 200
    post_form(owner, PAGE, f"{PAGE}/{credential}/rotate", {"gracePeriodSeconds": "0"})
    assert _works(client, new_key) == 401

    assert post_form(owner, PAGE, f"{PAGE}/{credential}/revoke", {}).status_code == 303
    db.expire_all()
    actions = db.scalars(select(AuditEvent.action).where(
        AuditEvent.target_id == credential, AuditEvent.actor_kind == "STAFF")).all()
    assert sorted(actions) == ["credential.issued", "credential.revoked", "credential.rotated",
                               "credential.rotated"]


@pytest.mark.parametrize("form, message", [
    ({"name": "", "scopes": ["program:read"]}, "name: "),
    ({"name": "None"}, "scopes: "),
    ({"name": "Odd", "scopes": ["everything:write"]}, "scopes"),
])
def test_a_refused_key_shows_why_and_issues_nothing(owner, client, tenant, form, message):
    answer = post_form(owner, PAGE, PAGE, form)
    assert answer.status_code == 422 and message in answer.get_data(as_text=True)
    assert 'id="new-key"' not in answer.get_data(as_text=True)
    names = [item["name"] for item in client.get("/v1/api-credentials",
                                                   headers=tenant.headers()).get_json()["items"]]
    assert names == ["all scopes"]


def test_a_rotation_with_a_wrong_grace_is_refused(owner, client, tenant):
    credential = _credential_id(client, tenant, "all scopes")
    answer = post_form(owner, PAGE, f"{PAGE}/{credential}/rotate", {"gracePeriodSeconds": "1 day"})
    assert answer.status_code == 422 and "gracePeriodSeconds: " in answer.get_data(as_text=True)
    assert _works(client, tenant.key) == 200


def test_another_companys_key_is_not_found(owner, client, other_tenant):
    theirs = _credential_id(client, other_tenant, "all scopes")
    assert post_form(owner, PAGE, f"{PAGE}/{theirs}/rotate", {}).status_code == 404
    assert post_form(owner, PAGE, f"{PAGE}/{theirs}/revoke", {}).status_code == 404
    assert _works(client, other_tenant.key) == 200
