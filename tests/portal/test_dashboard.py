"""The dashboard: its figures, and each chart's table, are the reports API's for the same
period; the period is read as the API reads it; the company's report slots apply."""
from __future__ import annotations

from datetime import timedelta

from app.database.engine import utcnow
from app.services.reports.periods import moscow_day
from tests.checkout.conftest import line
from tests.portal.helpers import add_staff, roubles, sign_in, table

EN = {"Accept-Language": "en"}


def _api(client, tenant, name, **query):
    answer = client.get(f"/v1/reports/{name}", query_string=query, headers=tenant.headers())
    assert answer.status_code == 200
    return answer.get_json()


def _signed_in(app, tenant, role="accountant"):
    client = app.test_client()
    add_staff(app, tenant.company_id, f"{role}@example.com", role)
    assert sign_in(client, f"{role}@example.com").status_code == 303
    return client


def test_the_dashboard_shows_what_the_reports_api_answers(app, client, tenant, other_tenant,
                                                          shop, register):
    shop.program(accrual_delay_days=0)
    anna = shop.customer("100.00")
    register.checkout(anna, [line("1", "1000.00"), line("2", "500.00", quantity="3")],
                      redeem="50.00")
    today = moscow_day(utcnow())
    period = {"from": (today - timedelta(days=29)).isoformat(), "to": today.isoformat()}
    page = _signed_in(app, tenant).get("/portal/", headers=EN)
    assert page.status_code == 200

    program = _api(client, tenant, "program", **period)
    figures = page.get_data(as_text=True)
    for shown in (f"<dd>{program['enrolments']}</dd>", f"<dd>{program['loyaltySales']}</dd>",
                  roubles(program["accrued"]), roubles(program["redeemed"])):
        assert shown in figures
    ledger = _api(client, tenant, "ledger", groupBy="day", **period)["items"]
    assert table(page, "by-day-table")[1:] == [
        [item["period"], roubles(item["accrued"]), roubles(item["redeemed"])] for item in ledger]
    owed = _api(client, tenant, "liability")
    assert table(page, "expiring-table")[1:] == [
        [month["month"], roubles(month["amount"])] for month in owed["expiring"]] + [
        ["Never, or later", roubles(owed["neverExpires"])]]
    stores = _api(client, tenant, "registers", groupBy="store", **period)["items"]
    assert stores and table(page, "by-store-table")[1:] == [
        [store["name"], str(store["sales"]), roubles(store["amount"])] for store in stores]
    # Another company's dashboard has none of it.
    elsewhere = _signed_in(app, other_tenant, "owner").get("/portal/", headers=EN)
    assert table(elsewhere, "by-day-table")[1:] == [
        [item["period"], roubles("0.00"), roubles("0.00")] for item in ledger]
    assert "by-store-table" not in elsewhere.get_data(as_text=True)


def test_a_period_chosen_and_a_wrong_one(app, tenant):
    client = _signed_in(app, tenant)
    chosen = client.get("/portal/?from=2026-01-30&to=2026-02-02", headers=EN)
    assert [row[0] for row in table(chosen, "by-day-table")[1:]] == [
        "2026-01-30", "2026-01-31", "2026-02-01", "2026-02-02"]
    for query, field in (("from=20260130&to=2026-02-02", "from"),
                         ("from=2026-02-03&to=2026-02-02", "to"),
                         ("from=2025-01-01&to=2026-02-02", "to")):
        wrong = client.get(f"/portal/?{query}", headers=EN)
        html = wrong.get_data(as_text=True)
        assert wrong.status_code == 422 and 'class="error-summary"' in html, query
        assert f"<p>{field}: " in html and 'name="from"' in html
        assert "by-day-table" not in html


def test_the_dashboard_waits_its_turn_with_the_companys_reports(app, tenant):
    client = _signed_in(app, tenant)
    slots = app.extensions["report_slots"]
    # The slots the API's reports take: while they are held, the dashboard waits its turn.
    with slots.slot(tenant.company_id):
        busy = client.get("/portal/")
        assert busy.status_code == 429 and int(busy.headers["Retry-After"]) > 0
        assert client.get("/portal/reports/liability").status_code == 429
    assert client.get("/portal/").status_code == 200
