"""PATCH /v1/program (docs/api.md#tiers): every setting with its bounds, the tiers' rules, the
scope, `program.updated`."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from app.models import OutboxEvent

TIERS = [{"name": "Gold", "minSpend": "50000", "accrualPercent": "10"},
         {"name": "Base", "minSpend": "0", "accrualPercent": "3"},
         {"name": "Silver", "minSpend": "10000.50", "accrualPercent": "5.5"}]


def patch(client, tenant, body, key=None, **headers):
    return client.patch("/v1/program", json=body, headers=tenant.headers(key, **headers))


def _loc(response):
    assert response.status_code == 422, response.get_json()
    return [item["loc"] for item in response.get_json()["detail"]]


def test_a_new_program_shows_every_setting_with_its_default(client, tenant):
    program = client.get("/v1/program", headers=tenant.headers()).get_json()
    assert {key: program[key] for key in ("welcomeBonus", "birthdayBonus", "tiers",
                                          "tierWindowDays")} == {
        "welcomeBonus": "0.00", "birthdayBonus": "0.00", "tiers": [], "tierWindowDays": 365}


def test_every_setting_changes_and_the_answer_shows_them_all(client, tenant, db):
    body = {"accrualPercent": "7.25", "maxRedeemPercent": "50", "accrualDelayDays": 14,
            "holdTtlSeconds": 600, "enrollmentRequiresOtp": True, "clawbackPolicy": "WITHIN_BALANCE",
            "welcomeBonus": "100", "birthdayBonus": "250.5", "tiers": TIERS, "tierWindowDays": None}
    response = patch(client, tenant, body)
    assert response.status_code == 200, response.get_json()
    program = response.get_json()
    assert program == client.get("/v1/program", headers=tenant.headers()).get_json()
    assert (program["accrualPercent"], program["maxRedeemPercent"], program["accrualDelayDays"],
            program["holdTtlSeconds"], program["enrollmentRequiresOtp"], program["clawbackPolicy"],
            program["welcomeBonus"], program["birthdayBonus"], program["tierWindowDays"]) == (
        "7.25", "50.00", 14, 600, True, "WITHIN_BALANCE", "100.00", "250.50", None)
    # Listed by minSpend, whatever order they were given in.
    assert program["tiers"] == [
        {"name": "Base", "minSpend": "0.00", "accrualPercent": "3.00"},
        {"name": "Silver", "minSpend": "10000.50", "accrualPercent": "5.50"},
        {"name": "Gold", "minSpend": "50000.00", "accrualPercent": "10.00"}]
    events = [json.loads(event.payload)["data"] for event in db.scalars(
        select(OutboxEvent).where(OutboxEvent.company_id == tenant.company_id,
                                  OutboxEvent.type == "program.updated"))]
    assert events == [program]


def test_one_setting_leaves_the_others_as_they_were(client, tenant):
    before = client.get("/v1/program", headers=tenant.headers()).get_json()
    after = patch(client, tenant, {"welcomeBonus": "5"}).get_json()
    assert after == {**before, "welcomeBonus": "5.00"}
    assert patch(client, tenant, {"tiers": []}).get_json()["tiers"] == []


@pytest.mark.parametrize("body, loc", [
    ({}, ["body"]),
    ({"companyId": "x", "welcomeBonus": "1"}, ["body", "companyId"]),
    ({"accrualPercent": "100.01"}, ["body", "accrualPercent"]),
    ({"accrualPercent": 5}, ["body", "accrualPercent"]),
    ({"maxRedeemPercent": "1.234"}, ["body", "maxRedeemPercent"]),
    ({"accrualDelayDays": 3651}, ["body", "accrualDelayDays"]),
    ({"accrualDelayDays": "3"}, ["body", "accrualDelayDays"]),
    ({"holdTtlSeconds": 29}, ["body", "holdTtlSeconds"]),
    ({"enrollmentRequiresOtp": "yes"}, ["body", "enrollmentRequiresOtp"]),
    ({"clawbackPolicy": "SOMETIMES"}, ["body", "clawbackPolicy"]),
    ({"welcomeBonus": "-1"}, ["body", "welcomeBonus"]),
    ({"birthdayBonus": 100}, ["body", "birthdayBonus"]),
    ({"tierWindowDays": 0}, ["body", "tierWindowDays"]),
    ({"tierWindowDays": 3651}, ["body", "tierWindowDays"]),
    ({"tiers": [{"name": "A", "minSpend": "1", "accrualPercent": "1"}]}, ["body", "tiers"]),
    ({"tiers": [{"name": "A", "minSpend": "0", "accrualPercent": "1"},
                {"name": "A", "minSpend": "5", "accrualPercent": "2"}]}, ["body", "tiers"]),
    ({"tiers": [{"name": "A", "minSpend": "0", "accrualPercent": "1"},
                {"name": "B", "minSpend": "0.00", "accrualPercent": "2"}]}, ["body", "tiers"]),
    ({"tiers": [{"name": f"T{i}", "minSpend": str(i), "accrualPercent": "1"} for i in range(11)]},
     ["body", "tiers"]),
    ({"tiers": [{"name": "", "minSpend": "0", "accrualPercent": "1"}]}, ["body", "tiers", 0, "name"]),
    ({"tiers": [{"name": "x" * 51, "minSpend": "0", "accrualPercent": "1"}]},
     ["body", "tiers", 0, "name"]),
    ({"tiers": [{"name": "A", "minSpend": "-1", "accrualPercent": "1"}]},
     ["body", "tiers", 0, "minSpend"]),
    ({"tiers": [{"name": "A", "minSpend": "0", "accrualPercent": "101"}]},
     ["body", "tiers", 0, "accrualPercent"]),
    ({"tiers": [{"name": "A", "minSpend": "0"}]}, ["body", "tiers", 0, "accrualPercent"]),
])
def test_a_setting_out_of_bounds_is_a_422_and_changes_nothing(client, tenant, body, loc):
    before = client.get("/v1/program", headers=tenant.headers()).get_json()
    assert loc in _loc(patch(client, tenant, body))
    assert client.get("/v1/program", headers=tenant.headers()).get_json() == before


def test_changing_the_program_needs_program_write(client, tenant):
    key = tenant.key_with("program:read")
    response = patch(client, tenant, {"welcomeBonus": "1"}, key=key)
    assert response.status_code == 403
    assert response.get_json()["code"] == "insufficient_scope"
    assert 'scope="program:write"' in response.headers["WWW-Authenticate"]


def test_an_idempotency_key_replays_the_change(client, tenant, db):
    first = patch(client, tenant, {"birthdayBonus": "10"}, Idempotency_Key="program-change-1")
    again = patch(client, tenant, {"birthdayBonus": "10"}, Idempotency_Key="program-change-1")
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.headers["Idempotent-Replayed"] == "true" and again.get_json() == first.get_json()
    assert len(db.scalars(select(OutboxEvent).where(
        OutboxEvent.company_id == tenant.company_id, OutboxEvent.type == "program.updated")).all()) == 1
    short = patch(client, tenant, {"birthdayBonus": "10"}, Idempotency_Key="short")
    assert ["header", "Idempotency-Key"] in _loc(short)


def test_one_companys_change_leaves_another_as_it_was(client, tenant, other_tenant):
    before = client.get("/v1/program", headers=other_tenant.headers()).get_json()
    changed = patch(client, tenant, {"tiers": TIERS, "welcomeBonus": "9"})
    # Only a change that happened can show it stayed in its company.
    assert changed.status_code == 200 and changed.get_json()["welcomeBonus"] == "9.00"
    assert client.get("/v1/program", headers=other_tenant.headers()).get_json() == before


def test_the_operator_command_changes_the_same_program(app, client, tenant, db):
    runner = app.test_cli_runner()
    result = runner.invoke(args=["programs", "set", tenant.company_id, "--welcome-bonus", "50",
                                 "--birthday-bonus", "75.5", "--tier-window-days", "none"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].endswith(
        "welcome 50.00, birthday 75.50, tier window all time")
    program = client.get("/v1/program", headers=tenant.headers()).get_json()
    assert (program["welcomeBonus"], program["birthdayBonus"], program["tierWindowDays"]) == (
        "50.00", "75.50", None)
    assert len(db.scalars(select(OutboxEvent).where(
        OutboxEvent.company_id == tenant.company_id, OutboxEvent.type == "program.updated")).all()) == 1
    for option, value in (("--welcome-bonus", "-1"), ("--tier-window-days", "0"),
                          ("--birthday-bonus", "1.234")):
        refused = runner.invoke(args=["programs", "set", tenant.company_id, option, value])
        assert refused.exit_code == 2, refused.output


def test_a_change_reads_the_program_once(app, client, tenant):
    from sqlalchemy import event

    reads = []

    def count(conn, cursor, statement, *rest):
        if statement.lstrip().upper().startswith("SELECT") and "FROM programs" in statement:
            reads.append(statement)

    engine = app.extensions["engine"]
    event.listen(engine, "before_cursor_execute", count)
    try:
        response = patch(client, tenant, {"accrualPercent": "4", "tiers": TIERS})
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert response.status_code == 200, response.get_json()
    assert len(reads) == 1, reads
