"""The reports as the back office runs them: the very services of the reports API, each in a
snapshot of its own, within one of the company's report slots (at most two of a company at
once, as through the API) and with the API's statement timeout; the period read by the API's
own query schemas, so a date the API refuses is refused here with the same message."""
from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import marshmallow as ma
from flask import current_app, request
from psycopg2.errorcodes import QUERY_CANCELED
from sqlalchemy.exc import DBAPIError

from app.database.engine import request_session, utcnow
from app.web.errors import webargs_items
from app.portal.access import company_id, settings
from app.services.reports.fair_share import ReportTimedOut
from app.services.reports.periods import moscow_day

DEFAULT_DAYS = 30


def default_period() -> dict[str, str]:
    """The last 30 Moscow days, today included."""
    today = moscow_day(utcnow())
    return {"from": (today - timedelta(days=DEFAULT_DAYS - 1)).isoformat(),
            "to": today.isoformat()}


def read_query(schema, defaults: dict[str, str]) -> tuple[dict | None, list[str], dict]:
    """The page's query loaded by the report's API schema: (its arguments or None, the
    messages of what is wrong, the values to show in the form again). An empty field is
    taken as not given."""
    given = {name: value for name, value in request.args.items() if value.strip()}
    shown = {**defaults, **given}
    try:
        return schema().load(shown), [], shown
    except ma.ValidationError as invalid:
        return None, [f"{item['loc'][-1]}: {item['msg']}"
                      for item in webargs_items({"query": invalid.messages})], shown


class ReportRunner:
    def __init__(self, timeout_seconds: int):
        self.timeout_seconds = timeout_seconds

    def __call__(self, report, *args, **kwargs):
        """One report, in a snapshot of its own: what the request read or wrote before (the
        session's last use) is committed first, as the API does."""
        session = request_session()
        if session.in_transaction():
            session.commit()
        return report(session, company_id(), *args, timeout_seconds=self.timeout_seconds,
                      **kwargs)


@contextmanager
def report_slot():
    """A slot of the company's (else RateLimited, a 429 page) for the reports run in it; a
    statement cut off by the timeout is ReportTimedOut, as in the API."""
    timeout = settings().report_timeout_seconds
    with current_app.extensions["report_slots"].slot(company_id()):
        try:
            yield ReportRunner(timeout)
        except DBAPIError as error:
            if getattr(error.orig, "pgcode", None) == QUERY_CANCELED:
                raise ReportTimedOut(timeout) from None
            raise
