"""The reports pages: each report's parameters in a form, its result as a table, and
`format=csv` answering the very CSV the reports API gives for the same parameters (its schemas
dump the figures, its CSV writer writes them). Bad parameters show the form again with what is
wrong, in the API's words."""
from __future__ import annotations

from dataclasses import asdict

from flask import render_template, request
from flask_babel import lazy_gettext as _l

from app.api.report_csv import report_csv
from app.api.reports_schemas import (
    LedgerPeriod,
    LedgerReport,
    LedgerReportArgs,
    LiabilityReport,
    PeriodArgs,
    ProgramReport,
    RegisterGroup,
    RegisterReport,
    RegisterReportArgs,
)
from app.database.engine import utcnow
from app.portal.access import requires
from app.portal.blueprint import bp
from app.portal.report_runs import default_period, read_query, report_slot
from app.services.reports.ledger import ledger_movements
from app.services.reports.liability import liability
from app.services.reports.periods import DAY, MONTH, moscow_day
from app.services.reports.program import program_figures
from app.services.reports.registers import GROUPS, register_totals

MONEY, COUNT = "money", "count"
LEDGER_COLUMNS = [("accrued", _l("Accrued")), ("matured", _l("Matured")),
                  ("redeemed", _l("Redeemed")), ("restored", _l("Restored")),
                  ("adjusted", _l("Adjusted")), ("bonuses", _l("Bonuses")),
                  ("expired", _l("Expired")), ("clawed_back", _l("Clawed back"))]
REGISTER_COLUMNS = [("sales", _l("Sales"), COUNT), ("loyalty_sales", _l("With a customer"), COUNT),
                    ("offline_sales", _l("Offline"), COUNT), ("amount", _l("Amount"), MONEY),
                    ("discount", _l("Redeemed"), MONEY), ("accrued", _l("Accrued"), MONEY),
                    ("returns", _l("Returns"), COUNT),
                    ("returned_amount", _l("Refunded"), MONEY),
                    ("clawed_back", _l("Clawed back"), MONEY)]
UNITS = {"ledger": (DAY, MONTH), "registers": GROUPS}
GROUP_NAMES = {"store": _l("store"), "terminal": _l("terminal"), "cashier": _l("cashier"),
               "day": _l("day"), "month": _l("month")}


def _wants_csv() -> bool:
    return request.args.get("format") == "csv"


def _page(name: str, status: int = 200, **context):
    return render_template("portal/report.html", report=name, group_names=GROUP_NAMES,
                           units=UNITS.get(name, ()),
                           csv_query={**request.args.to_dict(), "format": "csv"},
                           **context), status


def _answer(name, args, schema, item_schema, values, **context):
    """The CSV the API answers for these arguments, or the page with the figures."""
    if _wants_csv():
        period = args["period"]
        return report_csv(name, period.first.isoformat(), period.last.isoformat(),
                          schema().dump(values),
                          None if item_schema is None else item_schema().fields)
    return _page(name, **context)


def _period_report(name: str, schema, defaults: dict | None = None):
    """The report's arguments from the query: (arguments, None), or (None, the form again)
    when it has not been sent yet (nothing run) or is wrong (what is wrong shown)."""
    sent = "from" in request.args or _wants_csv()
    args, errors, shown = read_query(schema, {**default_period(), **(defaults or {})})
    if args is None or not sent:
        return None, _page(name, 422 if sent else 200, errors=errors if sent else [], form=shown)
    return args, shown


@bp.get("/reports/liability")
@requires("reports")
def liability_report():
    now = utcnow()
    with report_slot() as run:
        owed = run(liability, now)
    values = asdict(owed) | {"expiring": [{"month": month, "amount": amount}
                                          for month, amount in owed.expiring]}
    today = moscow_day(now)
    if _wants_csv():
        return report_csv("liability", today.isoformat(), today.isoformat(),
                          LiabilityReport().dump(values))
    return _page("liability", owed=owed, errors=[], form={})


@bp.get("/reports/ledger")
@requires("reports")
def ledger_report():
    args, shown = _period_report("ledger", LedgerReportArgs, {"groupBy": DAY})
    if args is None:
        return shown
    with report_slot() as run:
        items = run(ledger_movements, args["period"], args["group_by"])
    return _answer("ledger", args, LedgerReport, LedgerPeriod, {"items": items}, items=items,
                   columns=LEDGER_COLUMNS, form=shown, errors=[])


@bp.get("/reports/registers")
@requires("reports")
def registers_report():
    args, shown = _period_report("registers", RegisterReportArgs, {"groupBy": "store"})
    if args is None:
        return shown
    only = {name: args[name] for name in ("store", "terminal", "cashier") if name in args}
    with report_slot() as run:
        items = run(register_totals, args["period"], args["group_by"], only)
    return _answer("registers", args, RegisterReport, RegisterGroup, {"items": items},
                   items=items, columns=REGISTER_COLUMNS, form=shown, errors=[])


@bp.get("/reports/program")
@requires("reports")
def program_report():
    args, shown = _period_report("program", PeriodArgs)
    if args is None:
        return shown
    with report_slot() as run:
        figures = run(program_figures, args["period"])
    return _answer("program", args, ProgramReport, None, figures, figures=figures, form=shown,
                   errors=[])
