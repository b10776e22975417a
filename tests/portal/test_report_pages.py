"""The reports pages: a form, a table, and `format=csv` answering byte for byte the CSV the
reports API answers for the same parameters; wrong parameters show the form again."""
from __future__ import annotations

import pytest

from app.database.engine import utcnow
from app.services.reports.periods import moscow_day
from tests.checkout.conftest import line
from tests.portal.helpers import add_staff, roubles, sign_in, table

EN = {"Accept-Language": "en"}


@pytest.fixture
def a_day_of_sales(shop, register):
    shop.program(accrual_delay_days=0)
    anna = shop.customer("100.00")
    register.checkout(anna, [line("1", "1000.00"), line("2", "500.00", quantity="3")],
                      redeem="50.00")
    return moscow_day(utcnow()).isoformat()


def _but_the_moment(answer) -> list[bytes]:
    """The CSV's lines, but the liability's `asOf` (the moment each was read)."""
    return [row for row in answer.get_data().splitlines(keepends=True)
            if not row.startswith(b"asOf,")]


@pytest.mark.parametrize("name, query", [
    ("liability", {}),
    ("ledger", {"groupBy": "day"}),
    ("ledger", {"groupBy": "month"}),
    ("registers", {"groupBy": "store"}),
    ("registers", {"groupBy": "terminal"}),
    ("program", {}),
])
def test_the_csv_is_the_apis_byte_for_byte(manager, client, tenant, a_day_of_sales, name, query):
    if name != "liability":
        query = {**query, "from": a_day_of_sales, "to": a_day_of_sales}
    api = client.get(f"/v1/reports/{name}", query_string=query,
                     headers=tenant.headers(Accept="text/csv"))
    page = manager.get(f"/portal/reports/{name}", query_string={**query, "format": "csv"})
    assert api.status_code == page.status_code == 200
    assert _but_the_moment(page) == _but_the_moment(api) and len(page.get_data().splitlines()) > 1
    assert page.headers["Content-Disposition"] == api.headers["Content-Disposition"]
    assert page.mimetype == "text/csv"


def test_the_page_shows_the_reports_table_and_links_its_csv(manager, client, tenant,
                                                            a_day_of_sales):
    query = {"from": a_day_of_sales, "to": a_day_of_sales, "groupBy": "terminal"}
    api = client.get("/v1/reports/registers", query_string=query,
                     headers=tenant.headers()).get_json()["items"]
    page = manager.get("/portal/reports/registers", query_string=query, headers=EN)
    rows = table(page, "")
    assert [row[0] for row in rows[1:]] == [item["name"] for item in api]
    assert rows[1][4] == roubles(api[0]["amount"])
    assert "format=csv" in page.get_data(as_text=True)


def test_a_report_not_yet_asked_for_shows_its_form(manager):
    page = manager.get("/portal/reports/ledger", headers=EN)
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and 'name="from"' in html and 'name="groupBy"' in html
    assert "error-summary" not in html and "Download CSV" not in html


@pytest.mark.parametrize("query, wrong", [
    ({"from": "2026-W48-1", "to": "2026-11-29"}, "from"),
    ({"from": "2026-11-29", "to": "2026-11-28"}, "to"),
    ({"from": "2026-11-01", "to": "2026-11-29", "groupBy": "week"}, "groupBy"),
])
def test_wrong_parameters_show_the_form_again_with_what_is_wrong(manager, query, wrong):
    for answer in (manager.get("/portal/reports/ledger", query_string=query),
                   manager.get("/portal/reports/ledger", query_string={**query,
                                                                       "format": "csv"})):
        html = answer.get_data(as_text=True)
        assert answer.status_code == 422 and answer.mimetype == "text/html"
        assert f"<p>{wrong}: " in html and f'value="{query["from"]}"' in html


def test_another_companys_sales_are_not_in_the_report(app, other_tenant, a_day_of_sales):
    client = app.test_client()
    add_staff(app, other_tenant.company_id, "other@example.com", "accountant")
    assert sign_in(client, "other@example.com").status_code == 303
    csv = client.get("/portal/reports/registers", query_string={
        "from": a_day_of_sales, "to": a_day_of_sales, "format": "csv"}).get_data(as_text=True)
    assert csv.splitlines()[1:] == []
