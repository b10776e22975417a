import marshmallow as ma

from app.api.base import ResponseSchema
from app.api.enums import Choice
from app.api.fields import Amount, Timestamp
from app.services.cards.gift_cards import STATES
from app.wire import CURRENCIES


class GiftCardResponse(ResponseSchema):
    code = ma.fields.String(required=True, metadata={
        "example": "************7KQ4", "description": "masked: only the last 4 shown"})
    state = Choice("GiftCardState", STATES, required=True)
    balance = Amount(required=True)
    initialAmount = Amount(attribute="initial_amount", required=True)
    currency = Choice("Currency", CURRENCIES, required=True)
    expiresAt = Timestamp(attribute="expires_at", allow_none=True, required=True)
