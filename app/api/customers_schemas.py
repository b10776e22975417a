import marshmallow as ma

from app.api.base import ResponseSchema, Schema
from app.api.fields import Amount, CalendarDate, Text, Timestamp, no_nul
from app.api.paging import OffsetArgs, offset_page_schema
from app.database.engine import utcnow
from app.services.customers.phones import InvalidPhone, normalise_phone

OLDEST_BIRTH_DATE = "1900-01-01"


class Phone(ma.fields.String):
    """A Russian phone number in any usual spelling, normalised to E.164 at the boundary."""

    def __init__(self, **kwargs):
        metadata = kwargs.pop("metadata", {})
        metadata.setdefault("example", "+79123456789")
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return normalise_phone(text)
        except InvalidPhone as exc:
            raise ma.ValidationError(str(exc)) from exc


def _plausible_birth_date(value):
    if value.isoformat() < OLDEST_BIRTH_DATE or value > utcnow().date():
        raise ma.ValidationError(f"must be between {OLDEST_BIRTH_DATE} and today")


class RewardBalance(ResponseSchema):
    available = Amount(required=True)
    pending = Amount(required=True)
    reserved = Amount(required=True)


class CreateCustomerRequest(Schema):
    OPTIONAL = ("lastName", "birthDate", "email", "enrollmentChallengeId")

    phone = Phone(required=True)
    firstName = Text(maximum=100, required=True)
    lastName = Text(maximum=100, allow_none=True)
    birthDate = CalendarDate(allow_none=True, validate=_plausible_birth_date)
    email = ma.fields.Email(allow_none=True, validate=ma.validate.Length(max=254))
    enrollmentChallengeId = ma.fields.String(allow_none=True,
                                             validate=[ma.validate.Length(max=36), no_nul])

    @ma.pre_load
    def _blank_is_absent(self, data, **kwargs):
        # Registers send "" for what they do not know; an optional field left blank is null.
        if isinstance(data, dict):
            data = {k: None if k in self.OPTIONAL and isinstance(v, str) and not v.strip() else v
                    for k, v in data.items()}
        return data


class CustomerResponse(ResponseSchema):
    """Dumped from {"customer", "balance", "card_url"}."""

    id = ma.fields.String(attribute="customer.id", required=True)
    phone = ma.fields.String(attribute="customer.phone", required=True)
    firstName = ma.fields.String(attribute="customer.first_name", required=True)
    lastName = ma.fields.String(attribute="customer.last_name", allow_none=True)
    birthDate = ma.fields.Date(attribute="customer.birth_date", allow_none=True)
    email = ma.fields.String(attribute="customer.email", allow_none=True)
    cardNumber = ma.fields.String(attribute="customer.card_number", required=True,
                                  metadata={"description": "EAN-13, for the register's scanner"})
    cardUrl = ma.fields.String(attribute="card_url", required=True,
                               metadata={"description": "The shopper's card page"})
    balance = ma.fields.Nested(RewardBalance, required=True)
    createdAt = Timestamp(attribute="customer.created_at", required=True)


CustomerDirectoryResponse = offset_page_schema(CustomerResponse, "CustomerDirectoryResponse")


class CustomerDirectoryArgs(OffsetArgs):
    query = Text(minimum=0, maximum=100, metadata={
        "description": "A fragment of the phone's digits, or of the first or last name"})
    minimumAvailable = Amount(minimum=0, metadata={
        "description": "Only customers with at least this much available (a number or a decimal "
                       "string)", "example": "100.00", "pattern": r"^[0-9]{1,18}(\.[0-9]{1,2})?$"})


class CustomerSearchArgs(Schema):
    class Meta:
        unknown = ma.EXCLUDE

    phone = Phone(required=True)
