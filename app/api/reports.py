"""Reports for the back office (docs/api.md#reports): JSON, or CSV when the request's Accept prefers
it. Each report reads one snapshot of its own (app.services.reports.periods.snapshot)."""
from __future__ import annotations

import functools
from dataclasses import asdict

from flask import current_app, g
from flask.views import MethodView
from psycopg2.errorcodes import QUERY_CANCELED
from sqlalchemy.exc import DBAPIError

from app.api.base import Blueprint, json_response
from app.api.report_csv import report_csv, wants_csv
from app.api.reports_schemas import (LedgerPeriod, LedgerReport, LedgerReportArgs,
                                     LiabilityReport, PeriodArgs, ProgramReport, RegisterGroup,
                                     RegisterReport, RegisterReportArgs)
from app.database.engine import request_session, utcnow
from app.services.reports.fair_share import ReportSlots, ReportTimedOut, per_process
from app.services.reports.ledger import ledger_movements
from app.services.reports.liability import liability
from app.services.reports.periods import moscow_day
from app.services.reports.program import program_figures
from app.services.reports.registers import register_totals

blp = Blueprint("reports", __name__, url_prefix="/v1", description="Reports")
ERRORS = ("report_timed_out",)


@blp.record_once
def _count_running_reports(state) -> None:
    settings = state.app.config["SETTINGS"]
    state.app.extensions["report_slots"] = ReportSlots(
        at_once=settings.reports_at_once, per_process=per_process(settings.web_threads),
        redis_url=settings.redis_url, namespace=settings.rq_queue)


def fair_share(view):
    """The report runs in one of its company's few slots (else a 429), its statements cut off
    after REPORT_TIMEOUT_SECONDS (a 503 then); the slot is given back however it ends."""
    @functools.wraps(view)
    def run(*args, **kwargs):
        timeout = current_app.config["SETTINGS"].report_timeout_seconds
        with current_app.extensions["report_slots"].slot(g.company_id):
            try:
                return view(*args, timeout_seconds=timeout, **kwargs)
            except DBAPIError as error:
                if getattr(error.orig, "pgcode", None) == QUERY_CANCELED:
                    raise ReportTimedOut(timeout) from None
                raise
    return run


def _csv_too(schema) -> dict:
    """The 200's content for the interface document: the JSON schema, and CSV (a header row,
    then one row per item). Given whole: flask-smorest writes no content beside one given."""
    return {"responses": {"200": {"description": "The report: JSON, or CSV for Accept: text/csv",
                                  "content": {
        "application/json": {"schema": {"$ref": f"#/components/schemas/{schema.__name__}"}},
        "text/csv": {"schema": {"type": "string"}}}}}}


def _outside_transaction():
    """The request's session with what authentication read committed: the report's snapshot
    must be its transaction's first statement."""
    session = request_session()
    if session.in_transaction():
        session.commit()
    return session


def _answer(name: str, period, schema, item_schema, values: dict):
    body = schema().dump(values)
    if not wants_csv():
        return json_response(body, 200)
    first, last = period
    return report_csv(name, first, last, body, None if item_schema is None
                      else item_schema().fields)


@blp.route("/reports/liability")
class Liability(MethodView):
    @blp.operation("getLiabilityReport", scope="reports:read", errors=ERRORS)
    @blp.response(200, LiabilityReport)
    @blp.doc(**_csv_too(LiabilityReport))
    @fair_share
    def get(self, timeout_seconds: int):
        """The points liability now: what the company owes its customers.

        For booking the deferred revenue at a month's end: the balances of all accounts
        (available, pending, reserved), how many accounts hold an available balance, and what
        their points' lots would expire in each of the next 12 calendar months (Europe/Moscow,
        the current month first, months with nothing as 0.00) if nothing were spent, the rest
        being `neverExpires`. One consistent snapshot; nothing is locked. `Accept: text/csv`
        answers the same figures as (figure, value) rows. At most two reports of a company run
        at once: a third is a 429 `rate_limited` with Retry-After."""
        now = utcnow()
        report = liability(_outside_transaction(), g.company_id, now,
                           timeout_seconds=timeout_seconds)
        today = moscow_day(now).isoformat()
        return _answer("liability", (today, today), LiabilityReport, None, asdict(report) | {
            "expiring": [{"month": month, "amount": amount} for month, amount in report.expiring]})


@blp.route("/reports/ledger")
class LedgerMovements(MethodView):
    @blp.operation("getLedgerReport", scope="reports:read", errors=ERRORS)
    @blp.arguments(LedgerReportArgs, location="query")
    @blp.response(200, LedgerReport)
    @blp.doc(**_csv_too(LedgerReport))
    @fair_share
    def get(self, args, timeout_seconds: int):
        """The ledger's movements by Moscow day or month.

        Signed sums of the entries by type over each period from `from` to `to` (Moscow
        calendar days, both included, at most 366): credits positive (accrued, matured,
        restored, bonuses), debits negative (redeemed, expired, clawedBack), `adjusted` as it
        falls. An entry counts on its createdAt; `matured` is what became ACTIVE from PENDING,
        on the moment it became available. Periods without movements are listed with zeros.
        The sums agree with the customers' activity histories, summed. At most two reports of
        a company run at once: a third is a 429 `rate_limited` with Retry-After."""
        period = args["period"]
        items = ledger_movements(_outside_transaction(), g.company_id, period, args["group_by"],
                                 timeout_seconds=timeout_seconds)
        return _answer("ledger", _dates(period), LedgerReport, LedgerPeriod, {"items": items})


@blp.route("/reports/registers")
class RegisterTotals(MethodView):
    @blp.operation("getRegisterReport", scope="reports:read", errors=ERRORS)
    @blp.arguments(RegisterReportArgs, location="query")
    @blp.response(200, RegisterReport)
    @blp.doc(**_csv_too(RegisterReport))
    @fair_share
    def get(self, args, timeout_seconds: int):
        """The shift reconciliation: sales and returns by store, terminal, cashier or day.

        For each group, the sales made in the period (Moscow days `from` to `to`; a sale made
        offline counts at its `soldAt`, under its register), those with a customer, those made
        offline, their amount (lines' amount − discount), the bonuses redeemed and
        accrued; and the returns made in the period, counted in their sale's group (by day:
        the return's day), the money they refunded and the bonuses they took back. Narrowed to
        a store, terminal or cashier by `storeId`, `terminalId`, `cashierId`. Sorted by key,
        null (sales without a cashier, say) last. In CSV, a name that begins with = + - @, a
        tab or a carriage return is written with a leading ' (never run as a formula). At most
        two reports of a company run at once: a third is a 429 `rate_limited` with
        Retry-After."""
        period = args["period"]
        only = {name: args[name] for name in ("store", "terminal", "cashier") if name in args}
        items = register_totals(_outside_transaction(), g.company_id, period, args["group_by"],
                                only, timeout_seconds=timeout_seconds)
        return _answer("registers", _dates(period), RegisterReport, RegisterGroup,
                       {"items": items})


@blp.route("/reports/program")
class ProgramFigures(MethodView):
    @blp.operation("getProgramReport", scope="reports:read", errors=ERRORS)
    @blp.arguments(PeriodArgs, location="query")
    @blp.response(200, ProgramReport)
    @blp.doc(**_csv_too(ProgramReport))
    @fair_share
    def get(self, args, timeout_seconds: int):
        """Whether the program and its campaigns pay, over a period.

        Enrolments, the customers who bought, sales and the average check (to the kopeck,
        half up), what was accrued and redeemed and their ratio (`redemptionRate`, 4 places,
        half up), the customers in each tier now, and each campaign that gave a line its
        percent in the period with its sales and accrual. `Accept: text/csv` answers the same
        figures as (figure, value) rows, a campaign's name that begins with = + - @, a tab or a
        carriage return with a leading '. At most two reports of a company run at once: a third
        is a 429 `rate_limited` with Retry-After."""
        period = args["period"]
        figures = program_figures(_outside_transaction(), g.company_id, period,
                                  timeout_seconds=timeout_seconds)
        return _answer("program", _dates(period), ProgramReport, None, figures)


def _dates(period) -> tuple[str, str]:
    return period.first.isoformat(), period.last.isoformat()
