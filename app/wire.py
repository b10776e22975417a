"""The wire format: how money, quantities, percents, moments and balances look outside.

Amounts are kopecks inside, quantities thousandths of a unit, percents basis points
(hundredths of a percent); outside they are decimal strings. Parsing works on the text
itself, so no float ever sees a value. Moments are RFC 3339 in UTC with Z, to the
millisecond. The schemas (app/api/fields.py) and the services' hand-built responses and
event payloads all format through here.
"""
from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone

# [0-9] rather than \d: \d also matches non-ASCII digits such as "٣".
# Every amount is in roubles (kopecks inside); the set a client may meet in `currency`.
CURRENCIES = ("RUB",)
_DECIMAL = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?")
# Bodies and the documents stored for them: compact JSON, text as it is. The encoder is made
# once; json.dumps with options makes one a call.
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def packed(data: bytes) -> bytes:
    """A document kept only to be read back (a quote's lines, an idempotent request's answer),
    as stored: zlib at level 1. Every stored byte is WAL (docs/performance.md, "The database's
    share of a checkout"); the next levels save a few bytes more for several times the CPU."""
    return zlib.compress(data, 1)


unpacked = zlib.decompress  # bytes from `packed`


def _parse_fixed(text: object, *, places: int, int_digits: int, example: str) -> int:
    """Return ``text`` as an integer count of 10**-places units, or raise ValueError."""
    message = (
        f"must be a decimal string with at most {int_digits} integer and "
        f"{places} fractional digits, e.g. \"{example}\""
    )
    if not isinstance(text, str):
        raise ValueError(message)
    match = _DECIMAL.fullmatch(text)
    if match is None:
        raise ValueError(message)
    sign, whole, fraction = match.groups()
    fraction = fraction or ""
    if len(whole) > int_digits or len(fraction) > places:
        raise ValueError(message)
    value = int(whole) * 10**places + int(fraction.ljust(places, "0"))
    return -value if sign else value


def _format_fixed(value: int, places: int) -> str:
    if type(value) is not int:  # a bool is an int, and no amount
        raise TypeError(f"expected an int, got {type(value).__name__}")
    whole, fraction = divmod(abs(value), 10**places)
    sign = "-" if value < 0 else ""
    return f"{sign}{whole}.{fraction:0{places}d}"


def parse_amount(text: str) -> int:
    """Kopecks from "7", "1.5", "-20.50"; the sign is left to the caller."""
    return _parse_fixed(text, places=2, int_digits=18, example="150.00")


def format_amount(kopecks: int) -> str:
    """Always two fractional digits: 15000 -> "150.00", -5 -> "-0.05"."""
    return _format_fixed(kopecks, 2)


def parse_quantity(text: str, *, allow_zero: bool = False) -> int:
    """Thousandths of a unit from "1.250"; a quantity sold or returned is positive (a count
    of what was returned so far may be zero)."""
    milli = _parse_fixed(text, places=3, int_digits=12, example="1.250")
    if milli < 0 or (milli == 0 and not allow_zero):
        raise ValueError("must be greater than zero" if not allow_zero else "must not be negative")
    return milli


def format_quantity(milli: int) -> str:
    """Always three fractional digits: 1250 -> "1.250"."""
    return _format_fixed(milli, 3)


def parse_percent(text: str) -> int:
    """Basis points from "5" or "33.33", between 0 and 100 percent inclusive."""
    bp = _parse_fixed(text, places=2, int_digits=3, example="5.00")
    if not 0 <= bp <= 10_000:
        raise ValueError("must be between 0 and 100")
    return bp


def format_percent(bp: int) -> str:
    """Always two fractional digits: 500 -> "5.00"."""
    return _format_fixed(bp, 2)


def format_timestamp(moment: datetime | None) -> str | None:
    """RFC 3339 in UTC with Z, to the millisecond; a naive moment is taken as UTC."""
    if moment is None:
        return None
    moment = moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    # Not strftime: its %Y drops the leading zeros of years before 1000 ("1-01-01").
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
            f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z")


@dataclass(frozen=True)
class Balance:
    """A reward account's three figures, kopecks: what every response with a balance shows."""

    available: int
    pending: int
    reserved: int

    @classmethod
    def of(cls, account) -> Balance:
        return cls(account.available, account.pending, account.reserved)

    def as_json(self) -> dict:
        return {"available": format_amount(self.available), "pending": format_amount(self.pending),
                "reserved": format_amount(self.reserved)}
