"""Authentication and scopes: the key names the company and what it may do."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import event, select, update

from app.api.base import operations
from app.database.engine import utcnow
from app.models import ApiCredential, PreviousKey
from app.services.tenancy import keys
from app.services.tenancy.scopes import ALL_SCOPES

from tests.conftest import TEST_PEPPER


@pytest.fixture
def statements(app):
    """The SQL statements the app runs while the test is in this fixture's scope."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    engine = app.extensions["engine"]
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def _unauthorized(response, code):
    assert response.status_code == 401, response.get_json()
    assert response.get_json()["code"] == code
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_missing_key_is_401_missing_api_key(client):
    _unauthorized(client.get("/v1/company"), "missing_api_key")


@pytest.mark.parametrize("header", [
    "Basic dXNlcjpwYXNz",
    "Bearer",
    "Bearer ",
    "Token lk_live_x",
    "Bearer not-a-key",
    "Bearer lk_live_short",
])
def test_malformed_authorization_is_401_invalid_api_key(client, header):
    _unauthorized(client.get("/v1/company", headers={"Authorization": header}), "invalid_api_key")


def test_scheme_name_is_case_insensitive(client, tenant):
    response = client.get("/v1/company", headers={"Authorization": f"bEaReR {tenant.key}"})
    assert response.status_code == 200


def test_bad_checksum_is_refused_without_a_database_query(client, tenant, statements):
    last = tenant.key[-1]
    tampered = tenant.key[:-1] + ("A" if last != "A" else "B")
    assert not keys.is_well_formed(tampered)
    _unauthorized(client.get("/v1/company", headers=tenant.headers(key=tampered)), "invalid_api_key")
    assert statements == []


def test_unknown_well_formed_key_is_401(client, tenant):
    made_up = keys.new_key()
    assert keys.is_well_formed(made_up)
    _unauthorized(client.get("/v1/company", headers=tenant.headers(key=made_up)), "invalid_api_key")


def test_revocation_is_effective_at_once(client, tenant):
    key = tenant.key_with("company:read")
    credential_id = _credential_id(client, tenant, key)
    assert client.get("/v1/company", headers=tenant.headers(key=key)).status_code == 200
    assert client.delete(f"/v1/api-credentials/{credential_id}", headers=tenant.headers()).status_code == 204
    _unauthorized(client.get("/v1/company", headers=tenant.headers(key=key)), "invalid_api_key")
    listed = {c["id"]: c for c in client.get("/v1/api-credentials", headers=tenant.headers()).get_json()["items"]}
    assert listed[credential_id]["revokedAt"] is not None


def test_rotation_without_grace_retires_the_old_key_at_once(client, tenant):
    old = tenant.key_with("company:read")
    credential_id = _credential_id(client, tenant, old)
    rotated = client.post(f"/v1/api-credentials/{credential_id}/rotate", headers=tenant.headers(), json={})
    assert rotated.status_code == 201
    body = rotated.get_json()
    assert body["id"] == credential_id and body["key"] != old and body["key"].startswith(body["prefix"])
    _unauthorized(client.get("/v1/company", headers=tenant.headers(key=old)), "invalid_api_key")
    assert client.get("/v1/company", headers=tenant.headers(key=body["key"])).status_code == 200


def test_rotation_with_grace_keeps_the_old_key_until_the_grace_ends(client, tenant, db):
    old = tenant.key_with("company:read")
    credential_id = _credential_id(client, tenant, old)
    rotated = client.post(f"/v1/api-credentials/{credential_id}/rotate", headers=tenant.headers(),
                          json={"gracePeriodSeconds": 600})
    new = rotated.get_json()["key"]
    assert client.get("/v1/company", headers=tenant.headers(key=old)).status_code == 200
    assert client.get("/v1/company", headers=tenant.headers(key=new)).status_code == 200

    end_grace(db, old)
    _unauthorized(client.get("/v1/company", headers=tenant.headers(key=old)), "invalid_api_key")
    assert client.get("/v1/company", headers=tenant.headers(key=new)).status_code == 200


@pytest.mark.parametrize("grace", [-1, 86401, "10"])
def test_rotation_grace_out_of_range_is_422(client, tenant, grace):
    credential_id = _credential_id(client, tenant, tenant.key)
    response = client.post(f"/v1/api-credentials/{credential_id}/rotate", headers=tenant.headers(),
                           json={"gracePeriodSeconds": grace})
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["loc"] == ["body", "gracePeriodSeconds"]


def test_another_companys_credential_is_404(client, tenant, other_tenant):
    theirs = _credential_id(client, other_tenant, other_tenant.key)
    for method, path in (("post", f"/v1/api-credentials/{theirs}/rotate"),
                         ("delete", f"/v1/api-credentials/{theirs}"),
                         ("delete", f"/v1/api-credentials/{uuid.uuid4()}"),
                         ("delete", "/v1/api-credentials/not-a-uuid")):
        response = getattr(client, method)(path, headers=tenant.headers(), json={} if method == "post" else None)
        assert response.status_code == 404
        assert response.get_json() == {"detail": "credential not found", "code": "not_found"}
    assert client.get("/v1/company", headers=other_tenant.headers()).status_code == 200


def test_a_key_cannot_grant_scopes_it_lacks(client, tenant):
    limited = tenant.key_with("credentials:write", "company:read")
    response = client.post("/v1/api-credentials", headers=tenant.headers(key=limited),
                           json={"name": "wider", "scopes": ["company:read", "ledger:write"]})
    assert response.status_code == 403
    assert response.get_json()["code"] == "insufficient_scope"
    assert 'scope="ledger:write"' in response.headers["WWW-Authenticate"]
    ok = client.post("/v1/api-credentials", headers=tenant.headers(key=limited),
                     json={"name": "narrower", "scopes": ["company:read"]})
    assert ok.status_code == 201


def test_issued_key_is_shown_once_and_stored_only_as_digest(client, tenant, db, caplog):
    caplog.set_level("DEBUG")
    issued = client.post("/v1/api-credentials", headers=tenant.headers(),
                         json={"name": "register 7", "scopes": ["checkout:write"]})
    assert issued.status_code == 201
    key = issued.get_json()["key"]
    assert keys.is_well_formed(key)
    assert client.get("/v1/company", headers=tenant.headers(key=key)).status_code == 403

    listing = client.get("/v1/api-credentials", headers=tenant.headers())
    assert key not in listing.get_data(as_text=True)
    assert all("key" not in item for item in listing.get_json()["items"])

    stored = db.scalar(select(ApiCredential).where(ApiCredential.id == issued.get_json()["id"]))
    columns = [str(getattr(stored, c.key)) for c in ApiCredential.__table__.columns]
    assert not any(key in value for value in columns)
    assert stored.key_digest == keys.key_digest("test-pepper", key)
    assert stored.prefix == key[:16]

    logged = "\n".join(record.getMessage() + str(getattr(record, "fields", "")) for record in caplog.records)
    assert "request" in logged  # the request lines were captured
    assert key not in logged and tenant.key not in logged


def test_last_used_is_written_at_most_once_a_minute(client, tenant, db, statements):
    assert client.get("/v1/company", headers=tenant.headers()).status_code == 200
    first = db.scalar(select(ApiCredential.last_used_at).where(ApiCredential.company_id == tenant.company_id))
    assert first is not None
    statements.clear()
    assert client.get("/v1/company", headers=tenant.headers()).status_code == 200
    assert not any(s.lstrip().upper().startswith("UPDATE") for s in statements)
    db.expire_all()
    assert db.scalar(select(ApiCredential.last_used_at)
                     .where(ApiCredential.company_id == tenant.company_id)) == first


def test_pos_key_longer_than_128_is_422_on_the_header(client, tenant):
    response = client.get("/v1/company", headers=tenant.headers(**{"X-Loyalty-Pos-Key": "p" * 129}))
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["loc"] == ["header", "X-Loyalty-Pos-Key"]


def _fill(rule: str) -> str:
    """A concrete path for a rule, with a random id in every path parameter."""
    import re
    return re.sub(r"<(?:[^:<>]+:)?[^<>]+>", lambda _: str(uuid.uuid4()), rule)


def test_every_operation_refuses_a_key_without_its_scope(app, client, tenant):
    declared = [(m, r, op) for m, r, op in operations(app) if op.scope is not None]
    assert len(declared) >= 7
    for method, rule, operation in declared:
        others = [s for s in ALL_SCOPES if s != operation.scope]
        key = tenant.key_with(*others)
        response = client.open(_fill(rule), method=method, headers=tenant.headers(key=key), json={})
        assert response.status_code == 403, (method, rule, response.get_json())
        assert response.get_json()["code"] == "insufficient_scope"
        assert response.headers["WWW-Authenticate"] == \
            f'Bearer error="insufficient_scope", scope="{operation.scope}"'


def test_every_operation_asks_for_a_key_first(app, client):
    for method, rule, operation in operations(app):
        if operation.scope is None:
            continue
        response = client.open(_fill(rule), method=method, data="not json", content_type="text/plain")
        assert response.status_code == 401, (method, rule)


def _credential_id(client, tenant, key) -> str:
    items = client.get("/v1/api-credentials", headers=tenant.headers()).get_json()["items"]
    prefix = key[:16]
    return next(item["id"] for item in items if item["prefix"] == prefix)


def end_grace(db, key: str) -> None:
    """The grace of the replaced `key` ended a second ago: how tests move time past it."""
    ended = db.execute(update(PreviousKey)
                       .where(PreviousKey.key_digest == keys.key_digest(TEST_PEPPER, key))
                       .values(valid_until=utcnow() - timedelta(seconds=1)))
    assert ended.rowcount == 1
    db.commit()
