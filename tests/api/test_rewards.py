"""The reward account, manual adjustments and the ledger's history."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import LedgerEntry, OutboxEvent, RewardAccount
from app.services.rewards import verification
from tests.api.test_customers import _pending_accrual, enrol


@pytest.fixture
def customer(client, tenant):
    return enrol(client, tenant)


def adjust(client, tenant, customer_id, amount, basis="goodwill", key=None):
    return client.post(f"/v1/customers/{customer_id}/reward-adjustments",
                       json={"amount": amount, "basis": basis},
                       headers=tenant.headers(Idempotency_Key=key or f"adj-{amount}-{basis}"[:128]))


def account(client, tenant, customer_id):
    response = client.get(f"/v1/customers/{customer_id}/reward-account", headers=tenant.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def activities(client, tenant, customer_id, **query):
    response = client.get(f"/v1/customers/{customer_id}/reward-activities", query_string=query,
                          headers=tenant.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_a_new_account_is_empty(client, tenant, customer):
    body = account(client, tenant, customer["id"])
    assert body["customerId"] == customer["id"]
    assert (body["available"], body["pending"], body["reserved"]) == ("0.00", "0.00", "0.00")
    assert body["updatedAt"].endswith("Z")


def test_a_credit_is_available_at_once_and_answers_the_balance_after(client, tenant, customer, db):
    response = adjust(client, tenant, customer["id"], "150.5", basis="complaint #12")
    assert response.status_code == 201
    body = response.get_json()
    assert body["customerId"] == customer["id"] and body["amount"] == "150.50"
    assert body["basis"] == "complaint #12" and body["createdAt"].endswith("Z")
    assert body["balance"] == {"available": "150.50", "pending": "0.00", "reserved": "0.00"}
    assert account(client, tenant, customer["id"])["available"] == "150.50"
    entry = db.scalar(select(LedgerEntry).where(LedgerEntry.id == body["id"]))
    assert (entry.type, entry.status, entry.amount, entry.basis) == ("ADJUSTMENT", "ACTIVE", 15050,
                                                                     "complaint #12")


def test_a_debit_takes_from_available(client, tenant, customer):
    adjust(client, tenant, customer["id"], "100.00")
    response = adjust(client, tenant, customer["id"], "-30.25", basis="correction")
    assert response.status_code == 201
    assert response.get_json()["amount"] == "-30.25"
    assert response.get_json()["balance"]["available"] == "69.75"


def test_a_debit_of_exactly_the_balance_empties_it(client, tenant, customer):
    adjust(client, tenant, customer["id"], "10.00")
    assert adjust(client, tenant, customer["id"], "-10.00").get_json()["balance"]["available"] == "0.00"


def test_a_debit_beyond_available_is_409_and_changes_nothing(client, tenant, customer, db):
    adjust(client, tenant, customer["id"], "10.00")
    response = adjust(client, tenant, customer["id"], "-10.01")
    assert response.status_code == 409
    assert response.get_json()["code"] == "insufficient_balance"
    assert account(client, tenant, customer["id"])["available"] == "10.00"
    assert len(db.scalars(select(LedgerEntry)).all()) == 1
    assert sorted(e.type for e in db.scalars(select(OutboxEvent))) == ["customer.created", "reward.adjusted"]


def test_pending_bonuses_cannot_be_debited(client, tenant, customer, app):
    _pending_accrual(app, tenant.company_id, customer["id"], 5000, matured=False)
    response = adjust(client, tenant, customer["id"], "-1.00")
    assert response.status_code == 409 and response.get_json()["code"] == "insufficient_balance"


def test_an_adjustment_emits_reward_adjusted_with_the_resource(client, tenant, customer, db):
    body = adjust(client, tenant, customer["id"], "5.00").get_json()
    event = db.scalar(select(OutboxEvent).where(OutboxEvent.type == "reward.adjusted"))
    assert json.loads(event.payload)["data"] == body


@pytest.mark.parametrize("body, loc", [
    ({"amount": "0", "basis": "x"}, ["body", "amount"]),
    ({"amount": "-0.00", "basis": "x"}, ["body", "amount"]),
    ({"amount": 10, "basis": "x"}, ["body", "amount"]),
    ({"amount": "10.001", "basis": "x"}, ["body", "amount"]),
    ({"amount": "1" * 19, "basis": "x"}, ["body", "amount"]),
    ({"basis": "x"}, ["body", "amount"]),
    ({"amount": "10"}, ["body", "basis"]),
    ({"amount": "10", "basis": ""}, ["body", "basis"]),
    ({"amount": "10", "basis": "   "}, ["body", "basis"]),
    ({"amount": "10", "basis": "x" * 501}, ["body", "basis"]),
    ({"amount": "10", "basis": "x", "status": "PENDING"}, ["body", "status"]),
])
def test_adjustment_body_is_validated(client, tenant, customer, body, loc, idem):
    response = client.post(f"/v1/customers/{customer['id']}/reward-adjustments", json=body,
                           headers=tenant.headers(Idempotency_Key=idem()))
    assert response.status_code == 422, response.get_json()
    assert [item["loc"] for item in response.get_json()["detail"]] == [loc]


def test_a_basis_of_500_characters_is_accepted(client, tenant, customer):
    assert adjust(client, tenant, customer["id"], "1.00", basis="б" * 500, key="long-basis").status_code == 201


def test_a_credit_beyond_the_bound_is_422(client, tenant, customer):
    assert adjust(client, tenant, customer["id"], "10000000000000.00", key="big-one-1").status_code == 201
    response = adjust(client, tenant, customer["id"], "0.01", key="big-two-2")
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["loc"] == ["body", "amount"]


def test_adjustments_need_ledger_write(client, tenant, customer):
    key = tenant.key_with("customers:write", "customers:read")
    response = client.post(f"/v1/customers/{customer['id']}/reward-adjustments",
                           json={"amount": "1.00", "basis": "x"},
                           headers=tenant.headers(key=key, Idempotency_Key="abcdefgh"))
    assert response.status_code == 403 and response.get_json()["code"] == "insufficient_scope"


def test_another_companys_customer_is_404_everywhere(client, tenant, other_tenant, customer, db):
    path = f"/v1/customers/{customer['id']}"
    for response in (
        client.get(f"{path}/reward-account", headers=other_tenant.headers()),
        client.get(f"{path}/reward-activities", headers=other_tenant.headers()),
        client.post(f"{path}/reward-adjustments", json={"amount": "1.00", "basis": "x"},
                    headers=other_tenant.headers(Idempotency_Key="stranger-1")),
    ):
        assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    assert db.scalars(select(LedgerEntry)).all() == []


@pytest.mark.parametrize("customer_id", ["no-such-customer", "00000000-0000-0000-0000-000000000000",
                                         "x" * 300])
def test_an_unknown_customer_is_404(client, tenant, customer_id):
    response = client.get(f"/v1/customers/{customer_id}/reward-account", headers=tenant.headers())
    assert response.status_code == 404


def test_the_account_matures_due_accruals_on_first_touch(client, tenant, customer, app, db):
    _pending_accrual(app, tenant.company_id, customer["id"], 1234, matured=False)
    body = account(client, tenant, customer["id"])
    assert (body["available"], body["pending"]) == ("0.00", "12.34")
    _pending_accrual(app, tenant.company_id, customer["id"], 1000, matured=True)  # both now due
    body = account(client, tenant, customer["id"])
    assert (body["available"], body["pending"]) == ("22.34", "0.00")
    assert verification.verify(db) == []


def test_activities_list_the_ledger_newest_first(client, tenant, customer, app, db):
    adjust(client, tenant, customer["id"], "100.00", basis="first")
    adjust(client, tenant, customer["id"], "-40.00", basis="second")
    _pending_accrual(app, tenant.company_id, customer["id"], 500, matured=False)
    # Spread the creation times so "newest first" has one right answer.
    now = utcnow()
    for basis, age in (("first", 3), ("second", 2)):
        db.execute(update(LedgerEntry).where(LedgerEntry.basis == basis)
                   .values(created_at=now - timedelta(minutes=age)))
    db.commit()
    page = activities(client, tenant, customer["id"])
    assert (page["offset"], page["limit"], page["total"]) == (0, 20, 3)
    pending, second, first = page["items"]
    assert (first["type"], first["amount"], first["status"], first["basis"]) == (
        "ADJUSTMENT", "100.00", "ACTIVE", "first")
    assert (second["amount"], second["basis"]) == ("-40.00", "second")
    assert (pending["type"], pending["amount"], pending["status"]) == ("ACCRUAL", "5.00", "PENDING")
    assert pending["availableAt"] > pending["createdAt"]
    assert set(first) == {"id", "type", "amount", "status", "availableAt", "basis", "saleId",
                          "returnId", "createdAt", "expiresAt", "author"}
    assert first["saleId"] is None and first["returnId"] is None


def test_activities_page_with_offset_and_limit(client, tenant, customer, db):
    for n in range(1, 6):
        adjust(client, tenant, customer["id"], f"{n}.00")
    now = utcnow()
    for entry in db.scalars(select(LedgerEntry)):
        db.execute(update(LedgerEntry).where(LedgerEntry.id == entry.id)
                   .values(created_at=now - timedelta(minutes=100 - entry.amount // 100)))
    db.commit()
    first = activities(client, tenant, customer["id"], limit=2)
    rest = activities(client, tenant, customer["id"], offset=2, limit=10)
    beyond = activities(client, tenant, customer["id"], offset=7, limit=2)
    assert [i["amount"] for i in first["items"]] == ["5.00", "4.00"]
    assert [i["amount"] for i in rest["items"]] == ["3.00", "2.00", "1.00"]
    assert (first["total"], rest["total"], beyond["total"], beyond["items"]) == (5, 5, 5, [])


def test_activities_show_matured_entries_as_active(client, tenant, customer, app):
    _pending_accrual(app, tenant.company_id, customer["id"], 800, matured=True)
    [entry] = activities(client, tenant, customer["id"])["items"]
    assert entry["status"] == "ACTIVE"


@pytest.mark.parametrize("query, loc", [({"limit": 0}, "limit"), ({"limit": 101}, "limit"),
                                        ({"offset": -1}, "offset"), ({"offset": "x"}, "offset")])
def test_activities_paging_bounds_are_422(client, tenant, customer, query, loc):
    response = client.get(f"/v1/customers/{customer['id']}/reward-activities", query_string=query,
                          headers=tenant.headers())
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["loc"] == ["query", loc]


def test_the_stored_account_agrees_with_the_ledger_after_adjustments(client, tenant, customer, db):
    for amount in ("10.00", "-3.00", "7.50", "-14.50"):
        assert adjust(client, tenant, customer["id"], amount).status_code == 201
    stored = db.scalar(select(RewardAccount).where(RewardAccount.customer_id == customer["id"]))
    assert stored.available == 0
    assert verification.verify(db) == []
