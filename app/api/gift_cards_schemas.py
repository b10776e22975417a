import marshmallow as ma

from app.api.base import Schema
from app.api.fields import Amount, Timestamp
from app.services.cards.gift_cards import STATES


class GiftCardResponse(Schema):
    code = ma.fields.String(required=True, metadata={
        "example": "************7KQ4", "description": "masked: only the last 4 shown"})
    state = ma.fields.String(required=True, metadata={"enum": list(STATES)})
    balance = Amount(required=True)
    initialAmount = Amount(attribute="initial_amount", required=True)
    currency = ma.fields.String(required=True, metadata={"example": "RUB"})
    expiresAt = Timestamp(attribute="expires_at", allow_none=True, required=True)
