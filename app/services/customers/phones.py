"""Russian phone numbers: every accepted spelling becomes one E.164 string (+7XXXXXXXXXX)."""
from __future__ import annotations

import re

import phonenumbers

REGION = "RU"
MAX_INPUT_LENGTH = 64  # longer text is no phone number; spare the parser
_SEPARATORS = re.compile(r"[\s()\-.+]")


class InvalidPhone(ValueError):
    pass


def normalise_phone(text: object) -> str:
    """`8 (912) 345-67-89`, `+7 912 345 67 89`, `9123456789` → `+79123456789`. Anything that is
    not a valid Russian number raises InvalidPhone."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_INPUT_LENGTH:
        raise InvalidPhone("must be a Russian phone number, e.g. +7 912 345-67-89")
    try:
        number = phonenumbers.parse(text, REGION)
    except phonenumbers.NumberParseException as exc:
        raise InvalidPhone("must be a Russian phone number, e.g. +7 912 345-67-89") from exc
    if not phonenumbers.is_valid_number(number) or phonenumbers.region_code_for_number(number) != REGION:
        raise InvalidPhone("not a valid Russian phone number")
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def digits_fragment(text: str) -> str | None:
    """The digits a directory query means when it is written as (part of) a phone number:
    `912 345`, `(912)`, `+7 912` → `912345`, `912`, `7912`. A whole valid number in any
    spelling becomes its E.164 digits. None when the text is not phone-like."""
    bare = _SEPARATORS.sub("", text)
    if not bare or not (bare.isascii() and bare.isdigit()):
        return None
    try:
        return normalise_phone(text)[1:]
    except InvalidPhone:
        return bare
