"""Concurrent debits on one account serialise on its row lock (PostgreSQL)."""
from __future__ import annotations

from functools import partial

import pytest
from sqlalchemy import select

from app.models import LedgerEntry
from app.services.rewards import verification
from tests.api.test_customers import enrol

from tests.concurrency import raising, run_together

pytestmark = pytest.mark.postgres


def together(app, count, request):
    """Run `request(client, i)` in `count` threads released at once; their responses."""
    clients = [app.test_client() for _ in range(count)]
    return raising(run_together([partial(request, clients[i], i) for i in range(count)]))


def test_twenty_simultaneous_debits_never_take_more_than_the_account_had(app, client, tenant, db):
    customer = enrol(client, tenant)
    path = f"/v1/customers/{customer['id']}/reward-adjustments"
    funded = client.post(path, json={"amount": "100.00", "basis": "opening"},
                         headers=tenant.headers(Idempotency_Key="opening-credit"))
    assert funded.status_code == 201

    def debit(client, i):
        response = client.post(path, json={"amount": "-7.00", "basis": f"debit {i}"},
                               headers=tenant.headers(Idempotency_Key=f"debit-{i:04d}"))
        return response.status_code, response.get_json()

    answers = together(app, 20, debit)
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] * 14 + [409] * 6  # 14 × 7.00 = 98.00 of 100.00
    assert all(body["code"] == "insufficient_balance" for status, body in answers if status == 409)
    afters = sorted(body["balance"]["available"] for status, body in answers if status == 201)
    assert len(set(afters)) == 14  # each saw the balance the one before it left
    account = client.get(f"/v1/customers/{customer['id']}/reward-account", headers=tenant.headers())
    assert account.get_json()["available"] == "2.00"
    debits = db.scalars(select(LedgerEntry.amount).where(LedgerEntry.amount < 0)).all()
    assert len(debits) == 14 and sum(debits) == -9800
    assert verification.verify(db) == []
