"""One-time codes for enrolment (docs/api.md#states, #otp)."""
from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import Customer, OtpChallenge, OutboxEvent
from app.services.tenancy import companies
from app.services.webhooks.outbox import revealed
from tests.conftest import TEST_PEPPER
from tests.api.test_customers import PHONE, enrol


def challenge(client, tenant, phone=PHONE, purpose="ENROLLMENT"):
    return client.post("/v1/otp-challenges", json={"phone": phone, "purpose": purpose},
                       headers=tenant.headers())


def issued(client, tenant, phone=PHONE) -> tuple[dict, str]:
    """A new challenge and the code its otp.code_issued event carried."""
    response = challenge(client, tenant, phone)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    return body, code_sent(client.application, body["id"])


def code_sent(app, challenge_id) -> str:
    """The code as the event's delivery would send it (it is stored encrypted)."""
    session = app.extensions["session_factory"]()
    try:
        for event in session.scalars(select(OutboxEvent).where(OutboxEvent.type == "otp.code_issued")):
            data = json.loads(revealed(event.type, event.payload, TEST_PEPPER))["data"]
            if data["challengeId"] == challenge_id:
                return data["code"]
    finally:
        session.close()
    raise AssertionError("no otp.code_issued event for the challenge")


def confirm(client, tenant, challenge_id, code):
    return client.post(f"/v1/otp-challenges/{challenge_id}/confirm", json={"code": code},
                       headers=tenant.headers())


def wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


def _age(db, challenge_id, **moments):
    """Move a challenge's times into the past instead of waiting."""
    now = utcnow()
    db.execute(update(OtpChallenge).where(OtpChallenge.id == challenge_id)
               .values({name: now - ago for name, ago in moments.items()}))
    db.commit()


@pytest.fixture
def otp_required(app, tenant):
    session = app.extensions["session_factory"]()
    companies.update_program(session, tenant.company_id, enrollment_requires_otp=True)
    session.commit()
    session.close()
    return tenant


def test_a_challenge_is_pending_for_five_minutes_with_five_attempts(client, tenant):
    response = challenge(client, tenant, phone="8 (912) 345-67-89")
    assert response.status_code == 201
    body = response.get_json()
    assert body["phone"] == PHONE and body["purpose"] == "ENROLLMENT"
    assert body["state"] == "PENDING" and body["attemptsLeft"] == 5
    assert set(body) == {"id", "phone", "purpose", "state", "expiresAt", "attemptsLeft", "resendAvailableAt"}
    assert body["expiresAt"] > body["resendAvailableAt"]


def test_the_code_travels_only_in_the_event_and_is_stored_as_an_argon2id_hash(client, tenant, db):
    body, code = issued(client, tenant)
    assert len(code) == 6 and code.isdigit()
    assert code not in json.dumps(body)
    stored = db.scalar(select(OtpChallenge).where(OtpChallenge.id == body["id"]))
    assert stored.code_hash.startswith("$argon2id$") and code not in stored.code_hash
    event = db.scalar(select(OutboxEvent).where(OutboxEvent.type == "otp.code_issued"))
    assert code not in event.payload  # encrypted until delivered
    assert json.loads(revealed(event.type, event.payload, TEST_PEPPER))["data"] == {
        "challengeId": body["id"], "phone": PHONE, "code": code, "expiresAt": body["expiresAt"]}


def test_development_also_logs_the_code(client, tenant, app, caplog):
    settings = app.config["SETTINGS"]
    app.config["SETTINGS"] = type(settings)(**{**settings.__dict__, "development": True})
    try:
        with caplog.at_level(logging.INFO, logger="app.otp"):
            _, code = issued(client, tenant)
    finally:
        app.config["SETTINGS"] = settings
    assert any(code in record.getMessage() for record in caplog.records)


def test_outside_development_the_code_is_not_logged(client, tenant, caplog):
    with caplog.at_level(logging.DEBUG):
        _, code = issued(client, tenant)
    assert not any(code in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("body, loc", [
    ({"phone": "123", "purpose": "ENROLLMENT"}, ["body", "phone"]),
    ({"phone": PHONE}, ["body", "purpose"]),
    ({"phone": PHONE, "purpose": "LOGIN"}, ["body", "purpose"]),
])
def test_challenge_body_is_validated(client, tenant, body, loc):
    response = client.post("/v1/otp-challenges", json=body, headers=tenant.headers())
    assert response.status_code == 422
    assert [item["loc"] for item in response.get_json()["detail"]] == [loc]


def test_no_code_is_sent_to_a_phone_enrolled_already(client, tenant, db):
    customer = enrol(client, tenant)
    response = challenge(client, tenant)
    assert response.status_code == 409
    assert response.get_json()["code"] == "customer_exists"
    assert response.get_json()["customerId"] == customer["id"]
    assert db.scalar(select(OtpChallenge)) is None


def test_the_right_code_confirms(client, tenant):
    body, code = issued(client, tenant)
    response = confirm(client, tenant, body["id"], code)
    assert response.status_code == 200
    assert response.get_json()["state"] == "CONFIRMED"
    again = confirm(client, tenant, body["id"], code)
    assert again.status_code == 409 and again.get_json()["code"] == "invalid_state"


def test_a_wrong_code_is_422_on_body_code_with_the_attempts_left(client, tenant, db):
    body, code = issued(client, tenant)
    response = confirm(client, tenant, body["id"], wrong(code))
    assert response.status_code == 422
    [item] = response.get_json()["detail"]
    assert item["loc"] == ["body", "code"] and item["type"] == "otp_invalid"
    assert item["ctx"] == {"attemptsLeft": 4} and "4" in item["msg"]
    stored = db.scalar(select(OtpChallenge).where(OtpChallenge.id == body["id"]))
    assert (stored.state, stored.attempts_left) == ("PENDING", 4)
    assert confirm(client, tenant, body["id"], code).get_json()["state"] == "CONFIRMED"


@pytest.mark.parametrize("sent", ["123456\n", "123456Z", "١٢٣٤٥٦", "12345", 123456])
def test_a_code_that_is_not_six_digits_is_refused_without_taking_an_attempt(client, tenant, db,
                                                                             sent):
    body, _ = issued(client, tenant)
    response = confirm(client, tenant, body["id"], sent)
    assert response.status_code == 422
    [item] = response.get_json()["detail"]
    assert item["loc"] == ["body", "code"] and item["type"] != "otp_invalid"
    stored = db.scalar(select(OtpChallenge).where(OtpChallenge.id == body["id"]))
    assert (stored.state, stored.attempts_left) == ("PENDING", 5)


def test_the_fifth_wrong_code_fails_the_challenge(client, tenant, db):
    body, code = issued(client, tenant)
    lefts = []
    for _ in range(5):
        response = confirm(client, tenant, body["id"], wrong(code))
        assert response.status_code == 422
        lefts.append(response.get_json()["detail"][0]["ctx"]["attemptsLeft"])
    assert lefts == [4, 3, 2, 1, 0]
    stored = db.scalar(select(OtpChallenge).where(OtpChallenge.id == body["id"]))
    assert (stored.state, stored.attempts_left) == ("FAILED", 0)
    after = confirm(client, tenant, body["id"], code)  # even the right code is too late
    assert after.status_code == 409 and after.get_json()["code"] == "invalid_state"


@pytest.mark.parametrize("code", ["12345", "1234567", "12345a", "١٢٣٤٥٦", 123456, "123456\n"])
def test_a_malformed_code_is_422_and_costs_no_attempt(client, tenant, db, code):
    body, _ = issued(client, tenant)
    response = confirm(client, tenant, body["id"], code)
    assert response.status_code == 422
    assert response.get_json()["detail"][0]["loc"] == ["body", "code"]
    assert db.scalar(select(OtpChallenge.attempts_left).where(OtpChallenge.id == body["id"])) == 5


def test_an_expired_challenge_cannot_be_confirmed(client, tenant, db):
    body, code = issued(client, tenant)
    _age(db, body["id"], expires_at=timedelta(seconds=1))
    response = confirm(client, tenant, body["id"], code)
    assert response.status_code == 409 and response.get_json()["code"] == "invalid_state"
    assert "EXPIRED" in response.get_json()["detail"]


def test_an_unknown_or_another_companys_challenge_is_404(client, tenant, other_tenant):
    body, code = issued(client, tenant)
    assert confirm(client, other_tenant, body["id"], code).status_code == 404
    assert confirm(client, tenant, "not-an-id", code).status_code == 404


def test_a_new_code_within_the_cooldown_is_429_with_retry_after(client, tenant, db):
    body, _ = issued(client, tenant)
    response = challenge(client, tenant, phone="8 912 345 67 89")
    assert response.status_code == 429
    assert response.get_json()["code"] == "rate_limited"
    assert 55 <= int(response.headers["Retry-After"]) <= 60
    # Another phone is not held back.
    assert challenge(client, tenant, phone="+79120000000").status_code == 201
    _age(db, body["id"], resend_available_at=timedelta(seconds=1))
    assert challenge(client, tenant).status_code == 201


def test_a_resent_code_supersedes_the_earlier_one(client, tenant, db):
    first, first_code = issued(client, tenant)
    _age(db, first["id"], resend_available_at=timedelta(seconds=1))
    second, second_code = issued(client, tenant)
    assert first["id"] != second["id"]
    assert confirm(client, tenant, first["id"], first_code).status_code == 409
    assert confirm(client, tenant, second["id"], second_code).status_code == 200


def test_otp_needs_customers_write(client, tenant):
    key = tenant.key_with("customers:read")
    response = client.post("/v1/otp-challenges", json={"phone": PHONE, "purpose": "ENROLLMENT"},
                           headers=tenant.headers(key=key))
    assert response.status_code == 403


# --- enrolment under the OTP policy -----------------------------------------------------

def _enrol(client, tenant, challenge_id=None, phone=PHONE):
    body = {"phone": phone, "firstName": "Иван"}
    if challenge_id is not None:
        body["enrollmentChallengeId"] = challenge_id
    return client.post("/v1/customers", json=body, headers=tenant.headers())


def _confirmed(client, tenant, phone=PHONE) -> str:
    body, code = issued(client, tenant, phone)
    assert confirm(client, tenant, body["id"], code).status_code == 200
    return body["id"]


def test_without_the_policy_no_challenge_is_needed(client, tenant):
    assert _enrol(client, tenant).status_code == 201


def test_with_the_policy_enrolment_needs_a_confirmed_challenge(client, otp_required, db):
    tenant = otp_required
    response = _enrol(client, tenant)
    assert response.status_code == 409 and response.get_json()["code"] == "enrollment_challenge_required"
    pending, _ = issued(client, tenant)
    assert _enrol(client, tenant, pending["id"]).status_code == 409  # not confirmed yet
    _age(db, pending["id"], resend_available_at=timedelta(seconds=1))
    challenge_id = _confirmed(client, tenant)
    created = _enrol(client, tenant, challenge_id)
    assert created.status_code == 201
    used = db.scalar(select(OtpChallenge).where(OtpChallenge.id == challenge_id))
    assert used.used_at is not None


def test_a_challenge_enrols_once(client, otp_required, db):
    tenant = otp_required
    challenge_id = _confirmed(client, tenant)
    assert _enrol(client, tenant, challenge_id).status_code == 201
    db.execute(update(Customer).values(phone="+79120000000"))  # the phone is free again
    db.commit()
    response = _enrol(client, tenant, challenge_id)
    assert response.status_code == 409 and response.get_json()["code"] == "enrollment_challenge_required"


def test_a_challenge_of_another_phone_does_not_enrol(client, otp_required):
    tenant = otp_required
    challenge_id = _confirmed(client, tenant, phone="+79120000000")
    response = _enrol(client, tenant, challenge_id, phone=PHONE)
    assert response.status_code == 409 and response.get_json()["code"] == "enrollment_challenge_required"
    assert _enrol(client, tenant, challenge_id, phone="+79120000000").status_code == 201


def test_a_challenge_of_another_company_does_not_enrol(client, otp_required, other_tenant):
    challenge_id = _confirmed(client, other_tenant)
    response = _enrol(client, otp_required, challenge_id)
    assert response.status_code == 409 and response.get_json()["code"] == "enrollment_challenge_required"


def test_a_stale_confirmation_does_not_enrol(client, otp_required, db):
    challenge_id = _confirmed(client, otp_required)
    _age(db, challenge_id, confirmed_at=timedelta(hours=1, seconds=1))
    response = _enrol(client, otp_required, challenge_id)
    assert response.status_code == 409 and response.get_json()["code"] == "enrollment_challenge_required"


def test_a_named_challenge_is_checked_even_without_the_policy(client, tenant):
    response = _enrol(client, tenant, "no-such-challenge")
    assert response.status_code == 409 and response.get_json()["code"] == "enrollment_challenge_required"


@pytest.mark.postgres
def test_parallel_guesses_get_five_attempts_in_all(app, client, tenant, db):
    from tests.api.test_rewards_concurrency import together

    body, code = issued(client, tenant)

    def guess(client, i):
        response = confirm(client, tenant, body["id"], wrong(code))
        return response.status_code, response.get_json()

    answers = together(app, 10, guess)
    assert sorted(status for status, _ in answers) == [409] * 5 + [422] * 5
    lefts = sorted(b["detail"][0]["ctx"]["attemptsLeft"] for s, b in answers if s == 422)
    assert lefts == [0, 1, 2, 3, 4]
    stored = db.scalar(select(OtpChallenge).where(OtpChallenge.id == body["id"]))
    assert (stored.state, stored.attempts_left) == ("FAILED", 0)
