import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.customers_schemas import Phone
from app.api.enums import Choice
from app.api.fields import Pattern, Timestamp
from app.services.customers.otp import CODE_DIGITS, PURPOSES, STATES


class CreateOtpChallengeRequest(Schema):
    phone = Phone(required=True)
    purpose = Choice("OtpPurpose", PURPOSES, required=True)


class ConfirmOtpChallengeRequest(Schema):
    code = ma.fields.String(required=True, validate=Pattern(
        rf"^[0-9]{{{CODE_DIGITS}}}$", error=f"must be a string of {CODE_DIGITS} digits"),
        metadata={"example": "4" * CODE_DIGITS})


class OtpChallengeResponse(ResponseSchema):
    """Dumped from {"challenge", "state"}: the state as of now (a lapsed PENDING is EXPIRED)."""

    id = ma.fields.String(attribute="challenge.id", required=True)
    phone = ma.fields.String(attribute="challenge.phone", required=True)
    purpose = Choice("OtpPurpose", PURPOSES, attribute="challenge.purpose", required=True)
    state = Choice("OtpChallengeState", STATES, required=True)
    expiresAt = Timestamp(attribute="challenge.expires_at", required=True)
    attemptsLeft = ma.fields.Integer(attribute="challenge.attempts_left", required=True)
    resendAvailableAt = Timestamp(attribute="challenge.resend_available_at", required=True)
