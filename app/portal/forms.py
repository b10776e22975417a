"""A form's text as the API's request body, so the API's schema loads it with the API's rules
and messages: whole numbers and yes/no typed as JSON would carry them, a moment typed in Moscow
time, a decimal comma allowed."""
from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import marshmallow as ma

from app.errors import webargs_items
from app.services.errors import DomainError, InvalidField

MOSCOW = ZoneInfo("Europe/Moscow")
_WHOLE = re.compile(r"-?[0-9]{1,9}")


def decimal(text: str) -> str:
    """An amount or percent typed with spaces or a decimal comma, as the API writes it."""
    return "".join(text.split()).replace(",", ".")


def whole(text: str):
    """A whole number as JSON's; anything else as typed (the schema says what is wrong)."""
    text = text.strip()
    return int(text) if _WHOLE.fullmatch(text) else text


def yes_no(text: str):
    return {"true": True, "false": False}.get(text, text)


def moment(text: str) -> str:
    """A moment typed without a zone (an <input type=datetime-local>) is Moscow time."""
    text = text.strip()
    try:
        typed = datetime.fromisoformat(text)
    except ValueError:
        return text  # the schema says what is wrong with it
    if typed.tzinfo is None:
        typed = typed.replace(tzinfo=MOSCOW)
    return typed.isoformat()


def refusals(invalid: ma.ValidationError) -> list[str]:
    """A schema's refusal as lines "field: message"."""
    return [f"{'.'.join(str(part) for part in item['loc'][1:]) or 'form'}: {item['msg']}"
            for item in webargs_items({"form": invalid.messages})]


def refusal(refused: DomainError) -> str:
    if isinstance(refused, InvalidField):
        return f"{refused.loc[-1]}: {refused.detail}"
    return refused.detail
