"""Points that expire (docs/api.md#expiry) through the public surface: the program's settings,
promotional points, the account's `expiring`, activities' `expiresAt`, expiry on reads and
by the periodic job, its entries and events."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.database.engine import utcnow
from app.models import LedgerEntry, OutboxEvent, RewardAccount
from app.services.tenancy import companies
from app.wire import format_timestamp
from tests.api.test_customers import enrol
from tests.api.test_rewards import account, activities
from tests.lots import age_lots
from worker.periodic import expire_points


@pytest.fixture
def customer(client, tenant):
    return enrol(client, tenant)


def program(db, tenant, **changes):
    companies.update_program(db, tenant.company_id, **changes)
    db.commit()


def credit(client, tenant, customer_id, amount, expires_at=None, expect=201):
    body = {"amount": amount, "basis": "promo"}
    if expires_at is not None:
        body["expiresAt"] = expires_at if isinstance(expires_at, str) else format_timestamp(expires_at)
    response = client.post(f"/v1/customers/{customer_id}/reward-adjustments", json=body,
                           headers=tenant.headers(Idempotency_Key=f"k-{utcnow().timestamp()}"))
    assert response.status_code == expect, response.get_json()
    return response.get_json()


def age(db, tenant, customer_id, by: timedelta):
    age_lots(db, tenant.company_id, customer_id, by)


def events(db, tenant, event_type):
    return [json.loads(payload)["data"] for payload in db.scalars(
        select(OutboxEvent.payload).where(OutboxEvent.company_id == tenant.company_id,
                                          OutboxEvent.type == event_type)
        .order_by(OutboxEvent.created_at))]


def expiry_entries(db, customer_id):
    return db.scalar(select(func.count()).select_from(LedgerEntry).where(
        LedgerEntry.customer_id == customer_id, LedgerEntry.type == "EXPIRY"))


def test_the_program_shows_its_expiry_settings_with_their_defaults(client, tenant, db):
    body = client.get("/v1/program", headers=tenant.headers()).get_json()
    assert (body["pointsLifetimeDays"], body["expiryReminderDays"]) == (None, 7)
    program(db, tenant, points_lifetime_days=365, expiry_reminder_days=companies.NULL)
    body = client.get("/v1/program", headers=tenant.headers()).get_json()
    assert (body["pointsLifetimeDays"], body["expiryReminderDays"]) == (365, None)


def test_the_operator_sets_and_clears_the_expiry_settings(app, client, tenant):
    runner = app.test_cli_runner()
    result = runner.invoke(args=["programs", "set", tenant.company_id, "--points-lifetime-days",
                                 "30", "--expiry-reminder-days", "none"])
    assert result.exit_code == 0, result.output
    assert "points lifetime 30 d, expiry reminder none," in result.output.strip().splitlines()[-1]
    body = client.get("/v1/program", headers=tenant.headers()).get_json()
    assert (body["pointsLifetimeDays"], body["expiryReminderDays"]) == (30, None)
    for option, value in (("--points-lifetime-days", "0"), ("--points-lifetime-days", "3651"),
                          ("--expiry-reminder-days", "91"), ("--expiry-reminder-days", "soon")):
        result = runner.invoke(args=["programs", "set", tenant.company_id, option, value])
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    result = runner.invoke(args=["programs", "set", tenant.company_id, "--points-lifetime-days",
                                 "none"])
    assert result.exit_code == 0, result.output
    assert client.get("/v1/program", headers=tenant.headers()).get_json()["pointsLifetimeDays"] is None


@pytest.mark.parametrize("amount, expires_at", [
    ("-10.00", timedelta(days=1)),           # only a credit expires
    ("10.00", timedelta(seconds=-1)),        # not later than now
    ("10.00", timedelta(days=3660)),         # more than ten years ahead
    ("10.00", "2030-01-01T00:00:00"),        # no time zone
    ("10.00", "9999-12-31T23:00:00-05:00"),  # beyond the last moment kept
    ("10.00", "tomorrow"),
    ("10.00", 1893456000),
])
def test_an_adjustments_expiry_is_checked(client, tenant, customer, amount, expires_at):
    if isinstance(expires_at, timedelta):
        expires_at = format_timestamp(utcnow() + expires_at)
    credit(client, tenant, customer["id"], "20.00")
    response = client.post(f"/v1/customers/{customer['id']}/reward-adjustments",
                           json={"amount": amount, "basis": "promo", "expiresAt": expires_at},
                           headers=tenant.headers(Idempotency_Key="refused-expiry"))
    assert response.status_code == 422, response.get_json()
    assert [error["loc"] for error in response.get_json()["detail"]] == [["body", "expiresAt"]]
    assert account(client, tenant, customer["id"])["available"] == "20.00"


def test_promotional_points_show_in_expiring_and_in_the_activities(client, tenant, customer):
    soon, later = utcnow() + timedelta(days=5), utcnow() + timedelta(days=9)
    credit(client, tenant, customer["id"], "100.00", expires_at=later)
    credit(client, tenant, customer["id"], "40.00", expires_at=soon)
    credit(client, tenant, customer["id"], "25.00")  # the program keeps points forever
    credit(client, tenant, customer["id"], "-60.00")  # the soonest lot first, then the next
    body = account(client, tenant, customer["id"])
    assert body["available"] == "105.00"
    assert body["expiring"] == [{"amount": "80.00", "expiresAt": format_timestamp(later)}]
    items = activities(client, tenant, customer["id"])["items"]
    assert [(item["amount"], item["expiresAt"]) for item in items] == [
        ("-60.00", None), ("25.00", None), ("40.00", format_timestamp(soon)),
        ("100.00", format_timestamp(later))]


def test_a_credit_takes_the_programs_lifetime_at_that_moment(client, tenant, customer, db):
    program(db, tenant, points_lifetime_days=30)
    before = utcnow()
    before = before.replace(microsecond=before.microsecond // 1000 * 1000)  # shown to the ms
    credit(client, tenant, customer["id"], "10.00")
    program(db, tenant, points_lifetime_days=365)  # later lots only
    credit(client, tenant, customer["id"], "5.00")
    expiring = account(client, tenant, customer["id"])["expiring"]
    assert [item["amount"] for item in expiring] == ["10.00", "5.00"]
    assert before + timedelta(days=30) <= _moment(expiring[0]) <= utcnow() + timedelta(days=30)
    assert _moment(expiring[1]) > utcnow() + timedelta(days=364)


def _moment(item):
    from datetime import datetime
    return datetime.fromisoformat(item["expiresAt"].replace("Z", "+00:00"))


def test_due_points_expire_when_the_account_is_read(client, tenant, customer, db):
    credit(client, tenant, customer["id"], "100.00", expires_at=utcnow() + timedelta(hours=1))
    credit(client, tenant, customer["id"], "30.00")
    age(db, tenant, customer["id"], timedelta(hours=2))
    body = account(client, tenant, customer["id"])
    assert (body["available"], body["expiring"]) == ("30.00", [])
    [expired, *_] = activities(client, tenant, customer["id"])["items"]
    assert (expired["type"], expired["amount"], expired["status"], expired["basis"],
            expired["expiresAt"]) == ("EXPIRY", "-100.00", "ACTIVE", "points expired", None)
    [event] = events(db, tenant, "reward.expired")
    assert event["customerId"] == customer["id"] and event["amount"] == "-100.00"
    assert event["balance"] == {"available": "30.00", "pending": "0.00", "reserved": "0.00"}
    account(client, tenant, customer["id"])  # nothing more is due: no entry of 0
    assert expiry_entries(db, customer["id"]) == 1


def test_the_phone_search_and_the_directory_show_balances_after_expiry(client, tenant, customer, db):
    credit(client, tenant, customer["id"], "100.00", expires_at=utcnow() + timedelta(hours=1))
    age(db, tenant, customer["id"], timedelta(hours=2))
    listed = client.get("/v1/customers", headers=tenant.headers()).get_json()["items"]
    assert [item["balance"]["available"] for item in listed] == ["0.00"]
    assert expiry_entries(db, customer["id"]) == 0  # the directory shows, it does not write
    found = client.get("/v1/customers/search", query_string={"phone": customer["phone"]},
                       headers=tenant.headers()).get_json()
    assert found["balance"]["available"] == "0.00"
    assert expiry_entries(db, customer["id"]) == 1


def test_the_periodic_job_reminds_once_and_then_expires(client, tenant, customer, db):
    program(db, tenant, points_lifetime_days=10, expiry_reminder_days=7)
    credit(client, tenant, customer["id"], "50.00")
    age(db, tenant, customer["id"], timedelta(days=2))
    assert expire_points(db, utcnow()) == 0 and events(db, tenant, "reward.expiring") == []
    age(db, tenant, customer["id"], timedelta(days=2))  # 3 of its 10 days left
    assert expire_points(db, utcnow()) == 1
    [reminder] = events(db, tenant, "reward.expiring")
    assert reminder["customerId"] == customer["id"] and reminder["amount"] == "50.00"
    assert expire_points(db, utcnow()) == 0  # once per lot
    age(db, tenant, customer["id"], timedelta(days=7))
    assert expire_points(db, utcnow()) == 1
    assert [event["amount"] for event in events(db, tenant, "reward.expired")] == ["-50.00"]
    assert len(events(db, tenant, "reward.expiring")) == 1
    assert account(client, tenant, customer["id"])["available"] == "0.00"
    db.expire_all()
    stored = db.scalar(select(RewardAccount).where(RewardAccount.customer_id == customer["id"]))
    assert (stored.next_expiry_at, stored.next_reminder_at) == (None, None)


def test_one_companys_expiry_leaves_another_companys_points(client, tenant, other_tenant, db):
    mine, theirs = enrol(client, tenant), enrol(client, other_tenant)
    credit(client, tenant, mine["id"], "10.00", expires_at=utcnow() + timedelta(hours=1))
    credit(client, other_tenant, theirs["id"], "10.00", expires_at=utcnow() + timedelta(days=3))
    age(db, tenant, mine["id"], timedelta(hours=2))
    expire_points(db, utcnow())
    assert account(client, other_tenant, theirs["id"])["available"] == "10.00"
    assert events(db, other_tenant, "reward.expired") == []
    assert [event["customerId"] for event in events(db, tenant, "reward.expired")] == [mine["id"]]


def test_the_program_patch_sets_and_clears_the_expiry_settings(client, tenant):
    def patch(body):
        return client.patch("/v1/program", json=body, headers=tenant.headers())

    body = patch({"pointsLifetimeDays": 90, "expiryReminderDays": 14}).get_json()
    assert (body["pointsLifetimeDays"], body["expiryReminderDays"]) == (90, 14)
    body = patch({"pointsLifetimeDays": None}).get_json()
    assert (body["pointsLifetimeDays"], body["expiryReminderDays"]) == (None, 14)
    for field, value in (("pointsLifetimeDays", 0), ("pointsLifetimeDays", 3651),
                         ("expiryReminderDays", 91), ("expiryReminderDays", "7")):
        response = patch({field: value})
        assert response.status_code == 422
        assert [error["loc"] for error in response.get_json()["detail"]] == [["body", field]]
