"""The dashboard (the portal's first page): a period's figures and charts, each figure from the
reports API's own services for the same period, so the page and the reports never disagree."""
from __future__ import annotations

from flask import render_template

from app.api.reports_schemas import PeriodArgs
from app.database.engine import utcnow
from app.portal import charts
from app.portal.access import requires
from app.portal.blueprint import bp
from app.portal.report_runs import default_period, read_query, report_slot
from app.services.reports.ledger import ledger_movements
from app.services.reports.liability import liability
from app.services.reports.periods import DAY
from app.services.reports.program import sales_figures
from app.services.reports.registers import register_totals


@bp.get("/")
@requires("dashboard")
def home():
    args, errors, shown = read_query(PeriodArgs, default_period())
    if args is None:
        return render_template("portal/dashboard.html", errors=errors, form=shown), 422
    period = args["period"]
    with report_slot() as run:
        figures = run(sales_figures, period)
        days = run(ledger_movements, period, DAY)
        owed = run(liability, utcnow())
        stores = run(register_totals, period, "store", {})
    return render_template(
        "portal/dashboard.html", errors=[], form=shown, figures=figures, owed=owed, days=days,
        stores=stores, expired=sum(item["expired"] for item in days),
        day_bars=charts.columns([[item["accrued"] for item in days],
                                 [item["redeemed"] for item in days]]),
        month_bars=charts.columns([[amount for _month, amount in owed.expiring]]),
        store_bars=charts.rows([store["amount"] for store in stores]), chart=charts)
