"""Every error is JSON in the contract's shapes; stack traces never reach a response."""
from __future__ import annotations

import dataclasses
import logging

import pytest
from sqlalchemy import text

from app import create_app
from tests.api.locations_helpers import store_body


def test_unknown_path_and_method_are_json(client, tenant):
    missing = client.get("/v1/no-such-thing", headers=tenant.headers())
    assert missing.status_code == 404
    assert missing.get_json() == {"detail": "not found", "code": "not_found"}
    wrong_method = client.put("/v1/company", headers=tenant.headers())
    assert wrong_method.status_code == 405
    assert wrong_method.get_json()["code"] == "method_not_allowed"
    assert client.get("/nowhere").get_json()["code"] == "not_found"


def test_body_that_is_not_json_is_415_after_authentication(client, tenant):
    response = client.post("/v1/api-credentials", headers=tenant.headers(), data="name=x",
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.get_json()["code"] == "unsupported_media_type"
    anonymous = client.post("/v1/api-credentials", data="name=x", content_type="text/plain")
    assert anonymous.status_code == 401


def test_validation_errors_use_the_http_validation_error_shape(client, tenant):
    response = client.post("/v1/api-credentials", headers=tenant.headers(),
                           json={"scopes": [], "companyId": "someone-else"})
    assert response.status_code == 422
    detail = response.get_json()["detail"]
    by_loc = {tuple(item["loc"]): item for item in detail}
    assert by_loc[("body", "name")]["type"] == "missing"
    assert ("body", "scopes") in by_loc
    assert by_loc[("body", "companyId")]["type"] == "unknown_field"
    assert all(set(item) == {"loc", "msg", "type"} for item in detail)


def test_missing_and_malformed_bodies_are_422_on_body(client, tenant):
    empty = client.post("/v1/api-credentials", headers=tenant.headers())
    assert empty.status_code == 422
    assert empty.get_json()["detail"] == [{"loc": ["body"], "msg": "a JSON body is required", "type": "missing"}]
    broken = client.post("/v1/api-credentials", headers=tenant.headers(), data="{",
                         content_type="application/json")
    assert broken.status_code == 422
    assert broken.get_json()["detail"][0]["type"] == "json_invalid"


def test_request_id_is_echoed_or_made(client):
    echoed = client.get("/health", headers={"X-Request-Id": "till-7-receipt-42"})
    assert echoed.headers["X-Request-Id"] == "till-7-receipt-42"
    made = client.get("/health")
    assert len(made.headers["X-Request-Id"]) == 32
    unsafe = client.get("/health", headers={"X-Request-Id": "<script>" + "x" * 200})
    assert len(unsafe.headers["X-Request-Id"]) == 32


@pytest.fixture
def small_app(settings):
    return create_app(dataclasses.replace(settings, max_content_length=200))


def test_body_over_the_limit_is_413(small_app, tenant):
    client = small_app.test_client()
    response = client.post("/v1/api-credentials", headers=tenant.headers(),
                           json={"name": "x" * 500, "scopes": ["company:read"]})
    assert response.status_code == 413
    assert response.get_json()["code"] == "payload_too_large"


def test_unexpected_error_is_500_without_a_trace(settings, caplog):
    app = create_app(settings)

    @app.get("/explode")
    def explode():
        raise RuntimeError("secret internals")

    response = app.test_client().get("/explode")
    assert response.status_code == 500
    assert response.get_json() == {"detail": "internal error", "code": "internal_error"}
    assert "secret internals" not in response.get_data(as_text=True)
    assert any("secret internals" in (r.exc_text or str(r.exc_info)) for r in caplog.records if r.exc_info)


@pytest.fixture
def refused_inserts(app):
    """A trigger refusing every new row of a table: a statement that fails in the database, as
    one of ours with a fault would. Yields a function that sets it on a table."""
    engine, tables = app.extensions["engine"], []
    postgres = engine.dialect.name == "postgresql"

    def refuse(table: str) -> None:
        with engine.begin() as connection:
            if postgres:
                connection.execute(text(
                    "CREATE OR REPLACE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"))
                connection.execute(text(f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} "
                                        "FOR EACH ROW EXECUTE FUNCTION refuse_row()"))
            else:
                connection.execute(text(f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} "
                                        "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"))
        tables.append(table)

    yield refuse
    with engine.begin() as connection:
        for table in tables:
            connection.execute(text(f"DROP TRIGGER refuse_{table}" + (f" ON {table}" if postgres else "")))


def _logged_failures(caplog) -> str:
    return "\n".join(logging.Formatter().formatException(record.exc_info)
                     for record in caplog.records if record.exc_info)


@pytest.mark.parametrize("table", ["stores", "reward_accounts"],
                         ids=["through the ORM", "through the unit of work"])
def test_a_failing_statement_is_logged_without_its_parameters(client, tenant, refused_inserts,
                                                              caplog, table):
    refused_inserts(table)
    if table == "stores":
        response = client.post("/v1/stores", headers=tenant.headers(),
                               json=store_body(name="Kiosk Sekret-4417"))
    else:
        response = client.post("/v1/customers", headers=tenant.headers(),
                               json={"phone": "+79123456781", "firstName": "Ivan"})
    assert response.status_code == 500
    logged = _logged_failures(caplog)
    assert "refused by the test" in logged  # the statement's failure was logged
    assert "SQL parameters hidden" in logged and "[parameters:" not in logged
    assert "Sekret-4417" not in logged and tenant.company_id not in logged


def test_health_needs_no_database_and_ready_checks_it(settings, tmp_path):
    broken = create_app(dataclasses.replace(
        settings, database_url=f"sqlite:///{tmp_path}/missing-dir/none.db"))
    client = broken.test_client()
    assert client.get("/health").status_code == 200
    ready = client.get("/ready")
    assert ready.status_code == 503
    assert ready.get_json()["code"] == "not_ready"


def test_ready_answers_when_the_database_does(client):
    response = client.get("/ready")
    assert response.status_code == 200
    assert all(isinstance(v, str) for v in response.get_json().values())


def test_no_redirect_is_built_from_the_host_header(settings, tenant):
    """Werkzeug would answer these with a 308 to http://evil.example/… (slashes merged, a
    trailing slash added): every one is a 404 and no answer has a Location."""
    app = create_app(settings)

    @app.get("/folder/")
    def folder():
        return "a rule that ends with a slash"

    client = app.test_client()
    evil = {"Host": "evil.example"}
    for path in ("/cards//a-card-token", "/static//app.css", "//health", "/folder"):
        response = client.get(path, headers=evil)
        assert (response.status_code, response.get_json()) == (404, {"detail": "not found",
                                                                       "code": "not_found"}), path
        assert "Location" not in response.headers
    for path in ("/v1//company", "/v1/sales/by-external-receipt//receipt-1"):
        response = client.get(path, headers={**evil, **tenant.headers()})
        assert response.status_code == 404 and "Location" not in response.headers, path
    assert client.get("/folder/", headers=evil).status_code == 200
