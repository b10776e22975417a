"""Fields that normalise at the boundary: money and quantities as decimal strings outside,
integers inside; timestamps as RFC 3339 UTC with Z."""
from __future__ import annotations

import re
from datetime import datetime, timezone

import marshmallow as ma

from app import wire


# Prices and receipt amounts: 100 billion roubles keeps every sum of a receipt, and every
# price of a catalog, far inside a 64-bit column.
MAX_AMOUNT = 100_000_000_000 * 100  # kopecks
DATE_PATTERN = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class Amount(ma.fields.Field):
    """Kopecks inside; "150.00" outside. A JSON number is refused (floats never touch money)."""

    def __init__(self, *, minimum: int | None = None, maximum: int | None = None, **kwargs):
        self.minimum, self.maximum = minimum, maximum
        metadata = kwargs.pop("metadata", {})
        metadata.setdefault("type", "string")
        metadata.setdefault("pattern", r"^-?[0-9]{1,18}(\.[0-9]{1,2})?$")
        metadata.setdefault("example", "150.00")
        super().__init__(metadata=metadata, **kwargs)

    def _serialize(self, value, attr, obj, **kwargs):
        return None if value is None else wire.format_amount(value)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str):
            raise ma.ValidationError("must be a decimal string such as \"150.00\"")
        try:
            kopecks = wire.parse_amount(value)
        except ValueError as exc:
            raise ma.ValidationError(str(exc)) from exc
        if self.minimum is not None and kopecks < self.minimum:
            raise ma.ValidationError(f"must be at least {wire.format_amount(self.minimum)}")
        if self.maximum is not None and kopecks > self.maximum:
            raise ma.ValidationError(f"must be at most {wire.format_amount(self.maximum)}")
        return kopecks


class Quantity(ma.fields.Field):
    """Thousandths inside; "1.250" outside. Positive, or from zero with `allow_zero`."""

    def __init__(self, *, allow_zero: bool = False, **kwargs):
        self.allow_zero = allow_zero
        metadata = kwargs.pop("metadata", {})
        metadata.setdefault("type", "string")
        metadata.setdefault("example", "1.000")
        super().__init__(metadata=metadata, **kwargs)

    def _serialize(self, value, attr, obj, **kwargs):
        return None if value is None else wire.format_quantity(value)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str):
            raise ma.ValidationError("must be a decimal string such as \"1.000\"")
        try:
            return wire.parse_quantity(value, allow_zero=self.allow_zero)
        except ValueError as exc:
            raise ma.ValidationError(str(exc)) from exc


class Percent(ma.fields.Field):
    """Basis points inside; "5.00" outside. In a request: a decimal string 0..100 with at
    most 2 fractional digits."""

    def __init__(self, **kwargs):
        metadata = kwargs.pop("metadata", {})
        metadata.setdefault("type", "string")
        metadata.setdefault("pattern", r"^[0-9]{1,3}(\.[0-9]{1,2})?$")
        metadata.setdefault("example", "5.00")
        super().__init__(metadata=metadata, **kwargs)

    def _serialize(self, value, attr, obj, **kwargs):
        return None if value is None else wire.format_percent(value)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str):
            raise ma.ValidationError("must be a decimal string such as \"5.00\"")
        try:
            return wire.parse_percent(value)
        except ValueError as exc:
            raise ma.ValidationError(str(exc)) from exc


class Timestamp(ma.fields.DateTime):
    """RFC 3339 in UTC with Z."""

    def _serialize(self, value, attr, obj, **kwargs):
        return wire.format_timestamp(value)

    def _deserialize(self, value, attr, data, **kwargs):
        parsed: datetime = super()._deserialize(value, attr, data, **kwargs)
        if parsed.tzinfo is None:
            raise ma.ValidationError("must carry a time zone (e.g. Z)")
        try:
            return parsed.astimezone(timezone.utc)
        except OverflowError:  # 9999-12-31T23:00:00-05:00 is in the year 10000
            raise ma.ValidationError("is beyond the last representable moment") from None


class CalendarDate(ma.fields.Date):
    """A date written exactly YYYY-MM-DD. Python's ISO 8601 reading also takes `20261129` and
    the week date `2026-W48-1` (a Monday), which no client means to send as a day."""

    def __init__(self, **kwargs):
        metadata = kwargs.pop("metadata", {})
        metadata.setdefault("pattern", DATE_PATTERN.pattern)
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or DATE_PATTERN.fullmatch(value) is None:
            raise ma.ValidationError("must be a date written YYYY-MM-DD")
        return super()._deserialize(value, attr, data, **kwargs)


class JsonBoolean(ma.fields.Boolean):
    """true or false only: "yes" or 1 is a 422, not a guess."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


class Pattern(ma.validate.Regexp):
    """A pattern the interface document shows as written, in the part of regular expressions
    that Python and ECMA-262 (JavaScript, what the document's `pattern` means) read alike:
    `^…$` around explicit ranges such as `[0-9]`, never `\\d` (Unicode digits in Python),
    `\\A` or `\\Z` (not anchors in JavaScript). Matched whole: Python's `$` also matches before
    a final newline, which JavaScript's does not, so "123456\\n" is refused by both."""

    def __call__(self, value: str) -> str:
        if self.regex.fullmatch(value) is None:
            raise ma.ValidationError(self.error.format(input=value, regex=self.regex.pattern))
        return value


def no_nul(value: str) -> None:
    # PostgreSQL text cannot hold it.
    if "\x00" in value:
        raise ma.ValidationError("must not contain the NUL character")


class Text(ma.fields.String):
    """Trimmed text of `minimum`..`maximum` characters; blank counts as empty."""

    def __init__(self, minimum: int = 1, maximum: int = 100, **kwargs):
        super().__init__(validate=[ma.validate.Length(minimum, maximum), no_nul], **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        return super()._deserialize(value, attr, data, **kwargs).strip()
