"""Calls the program's tests share: campaigns and program changes through the public API."""
from __future__ import annotations

import uuid
from datetime import timedelta

from app.database.engine import utcnow
from app.wire import format_timestamp


def moment(**delta) -> str:
    return format_timestamp(utcnow() + timedelta(**delta))


def create_campaign(client, tenant, *, expect: int = 201, **fields) -> dict:
    body = {"name": "Double points", "startsAt": moment(hours=-1), "endsAt": moment(days=7),
            "accrualPercent": "10", **fields}
    response = client.post("/v1/campaigns", json=body, headers=tenant.headers())
    assert response.status_code == expect, response.get_json()
    return response.get_json()


def change_program(client, tenant, **fields) -> dict:
    response = client.patch("/v1/program", json=fields,
                            headers=tenant.headers(Idempotency_Key=uuid.uuid4().hex))
    assert response.status_code == 200, response.get_json()
    return response.get_json()
