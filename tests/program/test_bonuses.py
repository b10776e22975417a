"""Welcome and birthday bonuses (docs/api.md#tiers): BONUS entries, ACTIVE, `reward.adjusted`; the
birthday once a year in Moscow, by the periodic job and on any touch that day."""
from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone

from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import LedgerEntry, OutboxEvent, RewardAccount
from app.services.rewards import bonuses, verification
from tests.checkout.conftest import line
from tests.lots import age_lots
from tests.program.helpers import change_program
from worker.context import job_session
from worker.periodic import credit_birthdays

MOSCOW_NOON_UTC = 9  # 12:00 in Moscow


def enrol(client, tenant, phone: str, **more) -> dict:
    response = client.post("/v1/customers", json={"phone": phone, "firstName": "Olga", **more},
                           headers=tenant.headers())
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def bonus_entries(db, customer_id: str) -> list[tuple]:
    db.expire_all()
    return [(entry.type, entry.status, entry.amount, entry.basis) for entry in db.scalars(
        select(LedgerEntry).where(LedgerEntry.customer_id == customer_id, LedgerEntry.type == "BONUS")
        .order_by(LedgerEntry.created_at))]


def events(db, tenant) -> list[tuple[str, dict]]:
    db.expire_all()
    return [(event.type, json.loads(event.payload)["data"]) for event in db.scalars(
        select(OutboxEvent).where(OutboxEvent.company_id == tenant.company_id)
        .order_by(OutboxEvent.created_at))]


def years_ago(day: date, years: int = 30) -> str:
    return bonuses.birthday_in(day.year - years, day).isoformat()


def test_the_welcome_bonus_is_credited_at_enrolment(client, tenant, db):
    change_program(client, tenant, welcomeBonus="150")
    customer = enrol(client, tenant, "+79120000001")
    assert customer["balance"]["available"] == "150.00"
    assert bonus_entries(db, customer["id"]) == [("BONUS", "ACTIVE", 15000, "welcome")]
    kinds = [(kind, data.get("basis")) for kind, data in events(db, tenant)
             if kind in ("customer.created", "reward.adjusted")]
    assert kinds == [("customer.created", None), ("reward.adjusted", "welcome")]
    activity = client.get(f"/v1/customers/{customer['id']}/reward-activities",
                          headers=tenant.headers()).get_json()["items"][0]
    assert (activity["type"], activity["status"], activity["amount"], activity["basis"]) == (
        "BONUS", "ACTIVE", "150.00", "welcome")
    assert verification.verify(db, tenant.company_id) == []


def test_no_bonus_without_one_in_the_program(client, tenant, db):
    customer = enrol(client, tenant, "+79120000002", birthDate=years_ago(bonuses.today(utcnow())))
    assert customer["balance"]["available"] == "0.00"
    assert bonus_entries(db, customer["id"]) == []


def test_enrolled_on_the_birthday_gets_it_that_day_and_not_again(client, tenant, db):
    change_program(client, tenant, welcomeBonus="10", birthdayBonus="500")
    today = bonuses.today(utcnow())
    customer = enrol(client, tenant, "+79120000003", birthDate=years_ago(today))
    assert customer["balance"]["available"] == "510.00"
    assert client.get(f"/v1/customers/{customer['id']}/reward-account",
                      headers=tenant.headers()).get_json()["available"] == "510.00"
    _run_job(tenant.app, utcnow())
    assert bonus_entries(db, customer["id"]) == [("BONUS", "ACTIVE", 1000, "welcome"),
                                                 ("BONUS", "ACTIVE", 50000, "birthday")]
    assert _due_on(db, customer["id"]) == bonuses.birthday_in(today.year + 1, today)
    # Each credit's event shows the balance that credit left.
    assert [(data["basis"], data["balance"]["available"]) for kind, data in events(db, tenant)
            if kind == "reward.adjusted"] == [("welcome", "10.00"), ("birthday", "510.00")]


def _run_job(app, now: datetime) -> int:
    with job_session(app) as session:
        return credit_birthdays(session, now)


def _due_on(db, customer_id: str) -> date | None:
    db.expire_all()
    return db.scalar(select(RewardAccount.birthday_due_on).where(
        RewardAccount.customer_id == customer_id))


def _moscow_noon(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, MOSCOW_NOON_UTC, tzinfo=timezone.utc)


def test_the_periodic_job_credits_it_on_the_birthday_once_a_year(client, tenant, db):
    change_program(client, tenant, birthdayBonus="300")
    tomorrow = bonuses.today(utcnow()) + timedelta(days=1)
    customer = enrol(client, tenant, "+79120000004", birthDate=years_ago(tomorrow))
    assert _run_job(tenant.app, utcnow()) == 0
    assert bonus_entries(db, customer["id"]) == []
    assert _run_job(tenant.app, _moscow_noon(tomorrow)) == 1
    assert _run_job(tenant.app, _moscow_noon(tomorrow) + timedelta(hours=5)) == 0
    assert bonus_entries(db, customer["id"]) == [("BONUS", "ACTIVE", 30000, "birthday")]
    adjusted = [data for kind, data in events(db, tenant) if kind == "reward.adjusted"]
    assert [(data["customerId"], data["amount"], data["basis"], data["balance"]["available"])
            for data in adjusted] == [(customer["id"], "300.00", "birthday", "300.00")]
    next_year = bonuses.birthday_in(tomorrow.year + 1, tomorrow)
    assert _due_on(db, customer["id"]) == next_year
    assert _run_job(tenant.app, _moscow_noon(next_year)) == 1
    assert len(bonus_entries(db, customer["id"])) == 2


def test_the_birthday_is_a_day_in_moscow(client, tenant):
    # 22:30 UTC on 31 December is already 1 January in Moscow.
    assert bonuses.today(datetime(2026, 12, 31, 22, 30, tzinfo=timezone.utc)) == date(2027, 1, 1)
    assert bonuses.today(datetime(2026, 12, 31, 20, 30, tzinfo=timezone.utc)) == date(2026, 12, 31)


def test_29_february_is_the_28th_in_other_years():
    leap_born = date(2000, 2, 29)
    assert bonuses.next_birthday(leap_born, date(2027, 1, 10)) == date(2027, 2, 28)
    assert bonuses.next_birthday(leap_born, date(2027, 3, 1)) == date(2028, 2, 29)
    assert bonuses.next_birthday(leap_born, date(2100, 1, 1)) == date(2100, 2, 28)
    credited_on = datetime(2027, 2, 28, MOSCOW_NOON_UTC, tzinfo=timezone.utc)
    assert bonuses.after_credit(leap_born, credited_on) == date(2028, 2, 29)
    assert bonuses.next_birthday(date(1990, 12, 31), date(2026, 12, 31)) == date(2026, 12, 31)


def test_a_leap_day_customer_is_credited_on_the_28th(client, tenant, db):
    change_program(client, tenant, birthdayBonus="100")
    customer = enrol(client, tenant, "+79120000005", birthDate="2000-02-29")
    due = _due_on(db, customer["id"])
    assert due.month == 2 and due.day == (29 if bonuses._leap(due.year) else 28)
    assert _run_job(tenant.app, _moscow_noon(due) - timedelta(days=1)) == 0
    assert _run_job(tenant.app, _moscow_noon(due)) == 1
    assert bonus_entries(db, customer["id"]) == [("BONUS", "ACTIVE", 10000, "birthday")]


def test_any_touch_that_day_credits_it(client, tenant, db):
    change_program(client, tenant, birthdayBonus="70")
    tomorrow = bonuses.today(utcnow()) + timedelta(days=1)
    customer = enrol(client, tenant, "+79120000006", birthDate=years_ago(tomorrow))
    # The day has come (as if it were tomorrow): the account says so when it is next read.
    account = db.scalar(select(RewardAccount).where(RewardAccount.customer_id == customer["id"]))
    account.birthday_due_on = bonuses.today(utcnow())
    db.commit()
    body = client.get(f"/v1/customers/{customer['id']}/reward-account", headers=tenant.headers())
    assert body.get_json()["available"] == "70.00"
    assert bonus_entries(db, customer["id"]) == [("BONUS", "ACTIVE", 7000, "birthday")]
    assert _run_job(tenant.app, utcnow()) == 0
    assert verification.verify(db, tenant.company_id) == []


def test_no_birthday_bonus_in_the_program_moves_the_day_on_without_an_entry(client, tenant, db):
    tomorrow = bonuses.today(utcnow()) + timedelta(days=1)
    customer = enrol(client, tenant, "+79120000007", birthDate=years_ago(tomorrow))
    assert _run_job(tenant.app, _moscow_noon(tomorrow)) == 1
    assert bonus_entries(db, customer["id"]) == []
    assert _due_on(db, customer["id"]) == bonuses.birthday_in(tomorrow.year + 1, tomorrow)


def test_a_birthday_bonus_credited_on_a_touch_lets_no_held_point_expire(register, shop):
    shop.program(points_lifetime_days=1, birthday_bonus=30000)
    customer = shop.customer("100.00")
    session, quote, _ = register.held(customer, [line("1", "10.00")])  # 3.00 held
    shop.arrange(lambda s: age_lots(s, shop.tenant.company_id, customer, timedelta(days=2)))
    shop.arrange(lambda s: s.execute(update(RewardAccount).where(
        RewardAccount.customer_id == customer).values(birthday_due_on=bonuses.today(utcnow()))))
    # The 100.00 expired before the bonus came: all but the 3.00 the hold keeps
    # (docs/api.md#expiry).
    body = register.call("GET", f"/v1/customers/{customer}/reward-account", expect=200).get_json()
    assert (body["available"], body["reserved"]) == ("300.00", "3.00")
    assert [event["amount"] for event in shop.events("reward.expired")] == ["-97.00"]
    assert bonus_entries_of(shop, customer) == [("BONUS", "ACTIVE", 30000, "birthday")]
    assert [event["balance"]["available"] for event in shop.events("reward.adjusted")] == ["300.00"]
    assert register.commit(session["id"], quote["id"])["redeemed"] == "3.00"
    assert shop.verify() == []


def bonus_entries_of(shop, customer_id: str) -> list[tuple]:
    return shop.arrange(lambda s: bonus_entries(s, customer_id))
