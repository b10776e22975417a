"""One-time codes for enrolment (CONTRACT §9)."""
from __future__ import annotations

import logging

from flask import current_app, g
from flask.views import MethodView

from app.api.base import Blueprint
from app.api.otp_schemas import ConfirmOtpChallengeRequest, CreateOtpChallengeRequest, OtpChallengeResponse
from app.db import request_session, utcnow
from app.errors import validation_response
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
        """Send a code to the phone (through the otp.code_issued webhook)."""
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
        """Confirm the challenge with the code the shopper received."""
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
