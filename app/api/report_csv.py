"""Reports as CSV (docs/api.md#reports): a header row, then one row per item, money as in JSON,
UTF-8, sent as an attachment and streamed row by row, so a long report is never one string
in memory. Text someone typed (a store's, terminal's, cashier's, campaign's or tier's name) is
written so that no spreadsheet takes it for a formula; money, counts and dates as they are."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from flask import Response, request

CSV = "text/csv"
# The byte order mark lets a spreadsheet tell UTF-8 (Cyrillic names) from the desktop's code
# page; Python's utf-8-sig and accounting imports skip it.
_BOM = "\ufeff"
# What a spreadsheet reads as the start of a formula (OWASP's CSV injection list): such text
# gets a leading apostrophe, which the spreadsheet shows as text and does not display.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# The fields of the reports' items and entries that hold typed text: every other value is a
# figure (money such as "-12.50", a count) or an id or date the service wrote.
TYPED = frozenset({"name"})


def as_text(value: str | None) -> str | None:
    """A typed name as a cell no spreadsheet runs."""
    if value is not None and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def wants_csv() -> bool:
    """The request's Accept prefers CSV to JSON (JSON when it says nothing or anything else)."""
    return request.accept_mimetypes.best_match(["application/json", CSV]) == CSV


def csv_response(name: str, first: str, last: str, header: list[str],
                 rows: Iterable[list]) -> Response:
    def lines():
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(header)
        yield _BOM + buffer.getvalue()
        for row in rows:
            buffer.seek(0)
            buffer.truncate()
            writer.writerow(["" if value is None else value for value in row])
            yield buffer.getvalue()

    return Response(lines(), status=200, mimetype=CSV, headers={
        "Content-Disposition": f'attachment; filename="{name}-{first}-{last}.csv"'})


def item_rows(header: list[str], items: Iterable[dict]) -> Iterable[list]:
    """An answer's items as rows, their fields in the header's order."""
    return ([as_text(item[field]) if field in TYPED else item[field] for field in header]
            for item in items)


def figure_rows(figures: dict) -> Iterable[list]:
    """A one-object answer as (figure, value) rows; its lists' entries named by their first
    field, then the field (`expiring.2026-05.amount`)."""
    for name, value in figures.items():
        if isinstance(value, list):
            for entry in value:
                label, *rest = entry.items()
                for field, field_value in rest:
                    yield [f"{name}.{label[1]}.{field}",
                           as_text(field_value) if field in TYPED else field_value]
        else:
            yield [name, value]


def report_csv(name: str, first: str, last: str, body: dict, item_fields=None) -> Response:
    """A report's answer `body` (as its JSON schema dumps it) as CSV: its items' rows, fields
    in `item_fields`' order, or, for a one-object report, (figure, value) rows."""
    if item_fields is None:
        return csv_response(name, first, last, ["figure", "value"], figure_rows(body))
    header = list(item_fields)
    return csv_response(name, first, last, header, item_rows(header, body["items"]))
