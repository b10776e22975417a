"""Terminals: bound to a store of the company, ACTIVE or DISABLED, never more ACTIVE than
the subscription's registerLimit, even when registers are created at the same moment."""
from __future__ import annotations

import pytest
from sqlalchemy import event, func, select

from app.models import Terminal
from testbed.tenants import make_tenant
from tests.api.locations_helpers import create_store, create_terminal, validation_locs
from tests.concurrency import run_together


@pytest.fixture
def store(client, tenant):
    return create_store(client, tenant)


def _active_terminals(client, tenant) -> int:
    return client.get("/v1/subscription", headers=tenant.headers()).get_json()["activeTerminals"]


def _patch(client, tenant, terminal_id, **body):
    return client.patch(f"/v1/terminals/{terminal_id}", headers=tenant.headers(), json=body)


def _conflict(response, code):
    assert response.status_code == 409, response.get_json()
    assert response.get_json()["code"] == code
    assert response.get_json()["detail"]


def test_a_new_terminal_is_active_at_its_store(client, tenant, store):
    response = client.post("/v1/terminals", headers=tenant.headers(),
                           json={"storeId": store["id"], "name": "Register 1", "posKey": "reg-1"})
    assert response.status_code == 201
    terminal = response.get_json()
    assert terminal == {"id": terminal["id"], "storeId": store["id"], "name": "Register 1",
                        "state": "ACTIVE", "posKey": "reg-1", "createdAt": terminal["createdAt"],
                        "updatedAt": terminal["createdAt"]}
    assert _active_terminals(client, tenant) == 1


def test_pos_key_is_optional_and_unique_in_the_company(client, tenant, other_tenant, store):
    assert create_terminal(client, tenant, store["id"])["posKey"] is None
    assert create_terminal(client, tenant, store["id"], posKey=None)["posKey"] is None
    create_terminal(client, tenant, store["id"], posKey="front desk 1")

    again = client.post("/v1/terminals", headers=tenant.headers(),
                        json={"storeId": store["id"], "name": "Copy", "posKey": "front desk 1"})
    _conflict(again, "pos_key_in_use")
    theirs = create_store(client, other_tenant)
    assert create_terminal(client, other_tenant, theirs["id"], posKey="front desk 1")["posKey"] == "front desk 1"


def test_a_disabled_terminal_still_holds_its_pos_key(client, tenant, store):
    terminal = create_terminal(client, tenant, store["id"], posKey="reg-1")
    assert _patch(client, tenant, terminal["id"], state="DISABLED").status_code == 200
    again = client.post("/v1/terminals", headers=tenant.headers(),
                        json={"storeId": store["id"], "name": "New", "posKey": "reg-1"})
    _conflict(again, "pos_key_in_use")


@pytest.mark.parametrize("change, loc", [
    ({"posKey": ""}, ["body", "posKey"]),
    ({"posKey": "k" * 129}, ["body", "posKey"]),
    ({"posKey": " leading"}, ["body", "posKey"]),
    ({"posKey": "trailing "}, ["body", "posKey"]),
    ({"posKey": "reg-1\n"}, ["body", "posKey"]),  # Python's `$` would let the newline through
    ({"posKey": "касса-1"}, ["body", "posKey"]),
    ({"posKey": "tab\there"}, ["body", "posKey"]),
    ({"name": ""}, ["body", "name"]),
    ({"name": "n" * 201}, ["body", "name"]),
    ({"name": "  "}, ["body", "name"]),
    ({"name": "Reg\x00"}, ["body", "name"]),
    ({"storeId": None}, ["body", "storeId"]),
    ({"storeId": "s\x00"}, ["body", "storeId"]),
    ({"state": "DISABLED"}, ["body", "state"]),
])
def test_terminal_fields_are_checked(client, tenant, store, change, loc):
    body = {"storeId": store["id"], "name": "Register", **change}
    response = client.post("/v1/terminals", headers=tenant.headers(), json=body)
    assert validation_locs(response) == [loc]


def test_the_longest_pos_key_is_accepted(client, tenant, store):
    assert create_terminal(client, tenant, store["id"], posKey="k" * 128)["posKey"] == "k" * 128


def test_terminal_creation_needs_a_body_a_name_and_a_store(client, tenant):
    assert validation_locs(client.post("/v1/terminals", headers=tenant.headers())) == [["body"]]
    response = client.post("/v1/terminals", headers=tenant.headers(), json={})
    assert sorted(validation_locs(response)) == [["body", "name"], ["body", "storeId"]]


def test_a_store_of_another_company_or_unknown_is_404(client, tenant, other_tenant):
    theirs = create_store(client, other_tenant)
    for store_id in (theirs["id"], "no-such-store", "00000000-0000-4000-8000-000000000000"):
        response = client.post("/v1/terminals", headers=tenant.headers(),
                               json={"storeId": store_id, "name": "Register"})
        assert response.status_code == 404
        assert response.get_json()["code"] == "not_found"
    assert _active_terminals(client, tenant) == 0


def test_active_terminals_never_exceed_the_register_limit(app, client, store):
    tenant = make_tenant(app, "Small Shop", register_limit=2)
    store = create_store(client, tenant)
    create_terminal(client, tenant, store["id"])
    create_terminal(client, tenant, store["id"])

    third = client.post("/v1/terminals", headers=tenant.headers(),
                        json={"storeId": store["id"], "name": "One too many"})
    _conflict(third, "terminal_limit_reached")
    assert _active_terminals(client, tenant) == 2


def test_disabling_frees_a_slot_and_enabling_takes_one_again(app, client):
    tenant = make_tenant(app, "Small Shop", register_limit=2)
    store = create_store(client, tenant)
    first = create_terminal(client, tenant, store["id"])
    second = create_terminal(client, tenant, store["id"])

    disabled = _patch(client, tenant, first["id"], state="DISABLED")
    assert disabled.status_code == 200 and disabled.get_json()["state"] == "DISABLED"
    assert _active_terminals(client, tenant) == 1
    third = create_terminal(client, tenant, store["id"])  # the freed slot
    assert _active_terminals(client, tenant) == 2

    _conflict(_patch(client, tenant, first["id"], state="ACTIVE"), "terminal_limit_reached")
    # Staying ACTIVE is no new activation, even at the limit.
    assert _patch(client, tenant, second["id"], state="ACTIVE", name="Renamed").status_code == 200

    assert _patch(client, tenant, third["id"], state="DISABLED").status_code == 200
    enabled = _patch(client, tenant, first["id"], state="ACTIVE")
    assert enabled.status_code == 200 and enabled.get_json()["state"] == "ACTIVE"
    assert _active_terminals(client, tenant) == 2


def test_patch_renames_and_moves_a_terminal(client, tenant, store):
    terminal = create_terminal(client, tenant, store["id"], posKey="reg-9")
    other_store = create_store(client, tenant)

    response = _patch(client, tenant, terminal["id"], name="Front", storeId=other_store["id"])
    assert response.status_code == 200
    moved = response.get_json()
    assert (moved["name"], moved["storeId"], moved["state"]) == ("Front", other_store["id"], "ACTIVE")
    assert moved["posKey"] == "reg-9" and moved["createdAt"] == terminal["createdAt"]
    assert moved["updatedAt"] > terminal["updatedAt"]

    unchanged = _patch(client, tenant, terminal["id"], name="Front").get_json()
    assert unchanged["updatedAt"] == moved["updatedAt"]


@pytest.mark.parametrize("body, loc", [
    ({}, ["body"]),
    ({"state": "BROKEN"}, ["body", "state"]),
    ({"state": "active"}, ["body", "state"]),
    ({"name": None}, ["body", "name"]),
    ({"name": ""}, ["body", "name"]),
    ({"storeId": None}, ["body", "storeId"]),
    ({"storeId": "\x00"}, ["body", "storeId"]),
    ({"posKey": "new-key"}, ["body", "posKey"]),
])
def test_terminal_update_fields_are_checked(client, tenant, store, body, loc):
    terminal = create_terminal(client, tenant, store["id"])
    response = client.patch(f"/v1/terminals/{terminal['id']}", headers=tenant.headers(), json=body)
    assert validation_locs(response) == [loc]


def test_terminal_update_needs_a_body(client, tenant, store):
    terminal = create_terminal(client, tenant, store["id"])
    response = client.patch(f"/v1/terminals/{terminal['id']}", headers=tenant.headers())
    assert validation_locs(response) == [["body"]]


def test_another_companys_terminal_or_store_is_404_on_update(client, tenant, other_tenant, store):
    mine = create_terminal(client, tenant, store["id"])
    their_store = create_store(client, other_tenant)
    theirs = create_terminal(client, other_tenant, their_store["id"])

    for terminal_id in (theirs["id"], "no-such-terminal"):
        response = _patch(client, tenant, terminal_id, name="Taken over")
        assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    moved = _patch(client, tenant, mine["id"], storeId=their_store["id"])
    assert moved.status_code == 404 and moved.get_json()["code"] == "not_found"
    listed = client.get("/v1/terminals", headers=other_tenant.headers()).get_json()["items"]
    assert [(t["id"], t["name"]) for t in listed] == [(theirs["id"], theirs["name"])]


def test_terminals_are_listed_by_page_and_store(client, tenant, other_tenant, store):
    other_store = create_store(client, tenant)
    at_first = [create_terminal(client, tenant, store["id"])["id"] for _ in range(3)]
    at_other = create_terminal(client, tenant, other_store["id"])["id"]
    create_terminal(client, other_tenant, create_store(client, other_tenant)["id"])

    def listing(**query):
        response = client.get("/v1/terminals", headers=tenant.headers(), query_string=query)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    everything = listing()
    assert [t["id"] for t in everything["items"]] == at_first + [at_other]
    assert (everything["page"], everything["pageSize"], everything["total"]) == (1, 50, 4)
    page_two = listing(page=2, pageSize=3)
    assert [t["id"] for t in page_two["items"]] == [at_other] and page_two["total"] == 4
    by_store = listing(storeId=store["id"], pageSize=2)
    assert [t["id"] for t in by_store["items"]] == at_first[:2] and by_store["total"] == 3
    assert [t["id"] for t in listing(storeId=other_store["id"])["items"]] == [at_other]


def test_listing_by_an_unknown_or_foreign_store_is_404(client, tenant, other_tenant):
    theirs = create_store(client, other_tenant)
    for store_id in (theirs["id"], "nope"):
        response = client.get("/v1/terminals", headers=tenant.headers(),
                              query_string={"storeId": store_id})
        assert response.status_code == 404 and response.get_json()["code"] == "not_found"


@pytest.mark.parametrize("query, loc", [
    ({"page": 0}, ["query", "page"]),
    ({"pageSize": 0}, ["query", "pageSize"]),
    ({"pageSize": 201}, ["query", "pageSize"]),
])
def test_terminal_paging_bounds(client, tenant, query, loc):
    response = client.get("/v1/terminals", headers=tenant.headers(), query_string=query)
    assert validation_locs(response) == [loc]


def _in_threads(app, count: int, call) -> list:
    """`call(client, index)` from `count` threads released together; their responses."""
    return run_together([lambda i=i: call(app.test_client(), i) for i in range(count)])


@pytest.mark.postgres
def test_ten_concurrent_creations_never_pass_the_limit(app, client, db):
    tenant = make_tenant(app, "Busy Shop", register_limit=3)
    store = create_store(client, tenant)

    responses = _in_threads(app, 10, lambda c, i: c.post(
        "/v1/terminals", headers=tenant.headers(),
        json={"storeId": store["id"], "name": f"Register {i}", "posKey": f"reg-{i}"}))

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] * 3 + [409] * 7
    assert {r.get_json()["code"] for r in responses if r.status_code == 409} == {"terminal_limit_reached"}
    assert db.scalar(select(func.count()).select_from(Terminal).where(
        Terminal.company_id == tenant.company_id, Terminal.state == "ACTIVE")) == 3
    assert _active_terminals(client, tenant) == 3


@pytest.mark.postgres
def test_ten_concurrent_enablings_never_pass_the_limit(app, client, db):
    tenant = make_tenant(app, "Busy Shop", register_limit=10)
    store = create_store(client, tenant)
    terminals = [create_terminal(client, tenant, store["id"])["id"] for _ in range(10)]
    for terminal_id in terminals:
        assert _patch(client, tenant, terminal_id, state="DISABLED").status_code == 200
    with app.app_context():
        from app.services.tenancy import companies
        companies.update_subscription(db, tenant.company_id, register_limit=4)
        db.commit()

    responses = _in_threads(app, 10, lambda c, i: c.patch(
        f"/v1/terminals/{terminals[i]}", headers=tenant.headers(), json={"state": "ACTIVE"}))

    assert sorted(r.status_code for r in responses) == [200] * 4 + [409] * 6
    assert _active_terminals(client, tenant) == 4


@pytest.mark.postgres
def test_concurrent_creations_with_one_pos_key_make_one_terminal(app, client):
    tenant = make_tenant(app, "Busy Shop", register_limit=10)
    store = create_store(client, tenant)

    responses = _in_threads(app, 8, lambda c, i: c.post(
        "/v1/terminals", headers=tenant.headers(),
        json={"storeId": store["id"], "name": f"Register {i}", "posKey": "the-one"}))

    assert sorted(r.status_code for r in responses) == [201] + [409] * 7
    assert {r.get_json()["code"] for r in responses if r.status_code == 409} == {"pos_key_in_use"}


def _with_pos_key(client, tenant, pos_key, key=None):
    return client.get("/v1/stores", headers=tenant.headers(key=key, **{"X-Loyalty-Pos-Key": pos_key}))


def _terminal_inactive(response):
    assert response.status_code == 403, response.get_json()
    assert response.get_json()["code"] == "terminal_inactive"


def test_pos_key_must_name_an_active_terminal_of_the_company(client, tenant, other_tenant, store):
    terminal = create_terminal(client, tenant, store["id"], posKey="front-1")
    create_terminal(client, other_tenant, create_store(client, other_tenant)["id"], posKey="theirs-1")

    assert _with_pos_key(client, tenant, "front-1").status_code == 200
    _terminal_inactive(_with_pos_key(client, tenant, "no-such-register"))
    _terminal_inactive(_with_pos_key(client, tenant, "theirs-1"))
    _terminal_inactive(_with_pos_key(client, tenant, "FRONT-1"))
    _terminal_inactive(_with_pos_key(client, tenant, "front-1\x00"))

    assert _patch(client, tenant, terminal["id"], state="DISABLED").status_code == 200
    _terminal_inactive(_with_pos_key(client, tenant, "front-1"))
    assert _patch(client, tenant, terminal["id"], state="ACTIVE").status_code == 200
    assert _with_pos_key(client, tenant, "front-1").status_code == 200


def test_pos_key_length_is_checked_as_a_header(client, tenant, store):
    create_terminal(client, tenant, store["id"], posKey="k" * 128)
    assert _with_pos_key(client, tenant, "k" * 128).status_code == 200
    assert validation_locs(_with_pos_key(client, tenant, "k" * 129)) == [["header", "X-Loyalty-Pos-Key"]]


def test_the_key_and_scope_are_checked_before_the_pos_key(client, tenant):
    anonymous = client.get("/v1/stores", headers={"X-Loyalty-Pos-Key": "nope"})
    assert anonymous.status_code == 401
    narrow = tenant.key_with("company:read")
    refused = _with_pos_key(client, tenant, "nope", key=narrow)
    assert refused.status_code == 403 and refused.get_json()["code"] == "insufficient_scope"


def test_the_pos_key_costs_no_round_trip_of_its_own(app, client, tenant, store):
    create_terminal(client, tenant, store["id"], posKey="front-1")

    def statements(**headers) -> list[str]:
        seen: list[str] = []

        def record(conn, cursor, statement, parameters, context, executemany):
            seen.append(statement)

        engine = app.extensions["engine"]
        event.listen(engine, "before_cursor_execute", record)
        try:
            assert client.get("/v1/place-directory",
                              headers=tenant.headers(**headers)).status_code == 200
        finally:
            event.remove(engine, "before_cursor_execute", record)
        return seen

    plain, at_register = statements(), statements(**{"X-Loyalty-Pos-Key": "front-1"})
    assert len(at_register) == len(plain)
    lookups = [s for s in at_register if "terminals" in s]
    assert len(lookups) == 1 and "FROM api_credentials" in lookups[0]
    assert "terminals.company_id = api_credentials.company_id" in lookups[0]
    assert "terminals.pos_key =" in lookups[0]
