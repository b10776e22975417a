"""The resend cooldown holds under parallel requests: one code per phone a minute, however
many registers ask at once (docs/api.md#otp)."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from app.models import OtpChallenge, OutboxEvent
from tests.api.test_customers import PHONE
from tests.api.test_otp import _age, challenge, issued
from tests.api.test_rewards_concurrency import together

ASKING = 20


def _ask_together(app, tenant) -> list[tuple[int, dict, str | None]]:
    # The key's first use in a minute writes its last-used time, which would make the twenty
    # wait on the key's row and hide the race: use it once before.
    assert app.test_client().get("/v1/company", headers=tenant.headers()).status_code == 200

    def ask(client, i):
        # Spelled differently each time: the lock is on the normalised phone.
        response = challenge(client, tenant, phone=PHONE if i % 2 else "8 912 345-67-89")
        return response.status_code, response.get_json(), response.headers.get("Retry-After")

    return together(app, ASKING, ask)


def _one_sent(answers, db, expected_challenges: int):
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [201] + [429] * (ASKING - 1)
    for status, body, retry_after in answers:
        if status == 429:
            assert body["code"] == "rate_limited" and 1 <= int(retry_after) <= 60
    db.expire_all()
    challenges = db.scalars(select(OtpChallenge).where(OtpChallenge.phone == PHONE)).all()
    assert len(challenges) == expected_challenges
    assert [c.state for c in challenges].count("PENDING") == 1
    codes_sent = db.scalars(select(OutboxEvent).where(OutboxEvent.type == "otp.code_issued")).all()
    assert len(codes_sent) == expected_challenges


def test_twenty_first_requests_for_a_phone_send_one_code(app, tenant, db):
    """No challenge row exists yet for any of them to lock."""
    _one_sent(_ask_together(app, tenant), db, expected_challenges=1)


def test_twenty_requests_after_the_cooldown_send_one_code(app, client, tenant, db):
    first, _ = issued(client, tenant)
    _age(db, first["id"], resend_available_at=timedelta(seconds=1))
    _one_sent(_ask_together(app, tenant), db, expected_challenges=2)
