"""One-time codes for enrolment (docs/api.md#otp)."""
from __future__ import annotations

import logging

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.otp_schemas import ConfirmOtpChallengeRequest, CreateOtpChallengeRequest, OtpChallengeResponse
from app.database.engine import request_session, utcnow
from app.web.errors import validation_response
from app.services.customers import otp, profiles

blp = Blueprint("otp", __name__, url_prefix="/v1", description="One-time codes")
log = logging.getLogger("app.otp")


def present(challenge, now) -> dict:
    return {"challenge": challenge, "state": otp.state_of(challenge, now)}


@blp.route("/otp-challenges")
class OtpChallenges(MethodView):
    @blp.operation("createOtpChallenge", scope="customers:write",
                   errors=("customer_exists", "rate_limited"))
    @blp.arguments(CreateOtpChallengeRequest)
    @blp.response(201, OtpChallengeResponse)
    def post(self, body):
        """Send a code to the phone (through the otp.code_issued webhook).

        The 6-digit code travels only in the `otp.code_issued` webhook, for the company's SMS
        sender; it is stored as an argon2id hash. A phone enrolled already is a 409
        `customer_exists`; a new challenge for the same phone before `resendAvailableAt` (60 s) is a
        429 with `Retry-After`. The challenge is PENDING for 5 minutes with 5 attempts.
        """
        session, now = request_session(), utcnow()
        profiles.ensure_not_enrolled(session, g.company_id, body["phone"])
        settings = current_app.config["SETTINGS"]
        challenge, code = otp.issue_challenge(session, g.company_id, body["phone"], body["purpose"],
                                              now, pepper=settings.api_key_pepper)
        if settings.development:
            log.info("OTP code %s for %s (challenge %s)", code, challenge.phone, challenge.id)
        return present(challenge, now)


@blp.route("/otp-challenges/<challenge_id>/confirm")
class OtpConfirmation(MethodView):
    # A wrong code is committed although it is answered with an error, which a key's claim,
    # made in the same transaction, could not survive; and a confirmation makes nothing.
    @blp.operation("confirmOtpChallenge", scope="customers:write", errors=("invalid_state",),
                   key_refused="a confirmation is not replayed; send it without Idempotency-Key")
    @blp.arguments(ConfirmOtpChallengeRequest)
    @blp.response(200, OtpChallengeResponse)
    def post(self, body, challenge_id):
        """Confirm the challenge with the code the shopper received.

        `code` is a string of exactly 6 digits (anything else is a 422 that takes no attempt). A
        wrong code is a 422 on `body.code` of type `otp_invalid` with the attempts left; the fifth
        leaves the challenge FAILED. A challenge that is not PENDING (confirmed, expired, failed) is
        a 409 `invalid_state`. The confirmed challenge's id is then given once to enrolment as
        `enrollmentChallengeId`. No Idempotency-Key: a confirmation is not replayed.
        """
        session, now = request_session(), utcnow()
        outcome = otp.confirm_challenge(session, g.company_id, challenge_id, body["code"], now)
        if not outcome.confirmed:
            # The wrong guess must count although the answer is an error (which rolls back).
            session.commit()
            left = outcome.challenge.attempts_left
            msg = f"wrong code; {left} attempts left" if left else "wrong code; no attempts left"
            return validation_response([{"loc": ["body", "code"], "msg": msg, "type": "otp_invalid",
                                         "ctx": {"attemptsLeft": left}}])
        return present(outcome.challenge, now)
