"""A form's text as the API's request body, so the API's schema loads it with the API's rules
and messages: whole numbers and yes/no typed as JSON would carry them, a moment typed in Moscow
time, a decimal comma allowed."""
from __future__ import annotations

import re
from datetime import datetime
from functools import partial
from zoneinfo import ZoneInfo

import marshmallow as ma
from flask import flash

from app.database.engine import request_session
from app.web.errors import webargs_items
from app.portal.access import back_to
from app.services.errors import DomainError, InvalidField, NotFound

MOSCOW = ZoneInfo("Europe/Moscow")
_WHOLE = re.compile(r"-?[0-9]{1,9}")
_NUMBER = re.compile(r"-?[0-9]{1,4}(\.[0-9]{1,12})?")


def decimal(text: str) -> str:
    """An amount or percent typed with spaces or a decimal comma, as the API writes it."""
    return "".join(text.split()).replace(",", ".")


def whole(text: str):
    """A whole number as JSON's; anything else as typed (the schema says what is wrong)."""
    text = text.strip()
    return int(text) if _WHOLE.fullmatch(text) else text


def number(text: str):
    """A coordinate as JSON's number; anything else as typed (the schema says what is wrong)."""
    text = decimal(text)
    return float(text) if _NUMBER.fullmatch(text) else text


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


def attempted(change, again):
    """Make the change: (what it returns, None); refused by the API's schema or rules: (None,
    `again(errors=…, status=…)`), the page again with the API's message, nothing changed.
    Another company's id, as an unknown one, is the not-found page."""
    db = request_session()
    try:
        return change(), None
    except ma.ValidationError as invalid:
        return None, again(errors=refusals(invalid), status=422)
    except NotFound:
        raise
    except DomainError as refused:
        db.rollback()
        return None, again(errors=[refusal(refused)], status=refused.status)


def saved(change, message: str, endpoint: str, again):
    """Make the change, then back to `endpoint`'s page; refused: `again`, as `attempted`."""
    _done, refused = attempted(change, again)
    if refused is not None:
        return refused
    flash(message)
    return back_to(endpoint)


def shown_once(change, page, status: int, form=None):
    """A change that makes a secret (an API key, a signing secret) and returns (what it made,
    the secret): `page(secret=…)` with the secret on it, this once (it is never stored in the
    clear nor shown again); refused: `page(form=form)` with the refusal, as `attempted`."""
    made, refused = attempted(change, partial(page, form=form))
    if refused is not None:
        return refused
    _made, secret = made
    return page(secret=secret, status=status)
