"""The four reports through HTTP (docs/api.md#reports): fields, sums, periods, CSV, scope and
422s."""
from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest

from app.database.engine import utcnow
from app.services.reports.periods import moscow_day
from tests.checkout.conftest import line


def today() -> str:
    return moscow_day(utcnow()).isoformat()


def report(client, tenant, name: str, expect: int = 200, accept: str | None = None, **query):
    headers = tenant.headers(**({"Accept": accept} if accept else {}))
    response = client.get(f"/v1/reports/{name}", query_string=query, headers=headers)
    assert response.status_code == expect, response.get_data(as_text=True)[:500]
    return response


def test_a_day_at_the_register_in_every_report(client, tenant, shop, register):
    shop.program(accrual_delay_days=0)
    anna = shop.customer("100.00")
    bought = register.checkout(anna, [line("1", "1000.00"), line("2", "500.00", quantity="3")],
                               redeem="50.00")["sale"]
    register.return_lines(bought["id"], [("2", "1")])
    day = today()

    registers = report(client, tenant, "registers", **{"from": day, "to": day,
                                                        "groupBy": "terminal"}).get_json()
    assert registers["items"] == [{
        "key": shop.terminal_id, "name": "Register 1", "sales": 1, "loyaltySales": 1,
        "offlineSales": 0, "amount": "1450.00", "discount": "50.00", "accrued": bought["accrued"], "returns": 1,
        # a third of line 2's 500.00 − its discount share
        "returnedAmount": _third_of_net(bought, "2"),
        "clawedBack": _clawed(bought, "2")}]

    ledger = report(client, tenant, "ledger", **{"from": day, "to": day}).get_json()["items"]
    assert [item["period"] for item in ledger] == [day]
    assert ledger[0]["adjusted"] == "100.00" and ledger[0]["redeemed"] == "-50.00"
    assert ledger[0]["accrued"] == bought["accrued"] and ledger[0]["matured"] == "0.00"

    liability = report(client, tenant, "liability").get_json()
    balance = client.get(f"/v1/customers/{anna}/reward-account", headers=tenant.headers()).get_json()
    assert (liability["available"], liability["pending"], liability["reserved"]) == (
        balance["available"], balance["pending"], balance["reserved"])
    assert liability["accounts"] == 1 and len(liability["expiring"]) == 12
    assert liability["neverExpires"] == balance["available"]  # the program sets no lifetime

    program = report(client, tenant, "program", **{"from": day, "to": day}).get_json()
    assert (program["enrolments"], program["activeCustomers"], program["sales"]) == (1, 1, 1)
    assert program["averageCheck"] == "1450.00" and program["redeemed"] == "50.00"
    assert program["tiers"] == [] and program["campaigns"] == []


def test_the_program_report_counts_each_campaigns_sales_and_lines(client, tenant, shop,
                                                                   register):
    """Each campaign's sales in the period and what its lines accrued, sorted by name: the
    period's sales are found first and their campaign lines joined to them."""
    from app.wire import format_amount, parse_amount
    from tests.program.helpers import create_campaign

    shop.program(accrual_delay_days=0)
    latte = create_campaign(client, tenant, name="Latte days", skus=["LATTE"], accrualPercent="10")
    flat = create_campaign(client, tenant, name="Flat white", skus=["FLAT"], accrualPercent="20")
    anna, boris = shop.customer("0.00"), shop.customer("0.00")
    both = register.checkout(anna, [line("1", "300.00", sku="LATTE"),
                                    line("2", "200.00", sku="FLAT"),
                                    line("3", "100.00", sku="BREAD")])["sale"]
    one = register.checkout(boris, [line("1", "250.00", sku="LATTE"),
                                    line("2", "80.00", sku="LATTE", quantity="2",
                                         price="40.00")])["sale"]
    register.checkout(anna, [line("1", "90.00", sku="BREAD")])

    def accrued(*sold):
        return format_amount(sum(parse_amount(item["accrual"]) for sale, line_ids in sold
                                 for item in sale["lines"] if item["lineId"] in line_ids))

    day = today()
    program = report(client, tenant, "program", **{"from": day, "to": day}).get_json()
    assert program["sales"] == 3 and program["campaigns"] == [
        {"campaignId": flat["id"], "name": "Flat white", "sales": 1,
         "accrued": accrued((both, {"2"}))},
        {"campaignId": latte["id"], "name": "Latte days", "sales": 2,
         "accrued": accrued((both, {"1"}), (one, {"1", "2"}))}]
    yesterday = (moscow_day(utcnow()) - timedelta(days=1)).isoformat()
    assert report(client, tenant, "program", **{"from": yesterday, "to": yesterday}
                  ).get_json()["campaigns"] == []


def test_the_ledger_puts_an_entry_in_the_moscow_day_of_its_moment(client, tenant, shop):
    """23:59:59 and 00:00:00 Moscow (20:59:59 and 21:00:00 UTC) fall on two days, however the
    sums are gathered (by the hour, then the day)."""
    from sqlalchemy import update

    from app.models import LedgerEntry
    from app.services.reports.periods import moscow_midnight

    first = moscow_day(utcnow()) - timedelta(days=2)
    midnight = moscow_midnight(first + timedelta(days=1))
    anna, boris = shop.customer("100.00"), shop.customer("7.00")
    for customer_id, moment in ((anna, midnight - timedelta(seconds=1)), (boris, midnight)):
        shop.arrange(lambda s, c=customer_id, m=moment: s.execute(
            update(LedgerEntry).where(LedgerEntry.company_id == tenant.company_id,
                                      LedgerEntry.customer_id == c)
            .values(created_at=m, available_at=m)))
    items = report(client, tenant, "ledger", **{"from": first.isoformat(),
                                                "to": (first + timedelta(days=1)).isoformat(),
                                                "groupBy": "day"}).get_json()["items"]
    assert [(item["period"], item["adjusted"]) for item in items] == [
        (first.isoformat(), "100.00"), ((first + timedelta(days=1)).isoformat(), "7.00")]


def _third_of_net(sale: dict, line_id: str) -> str:
    from app.wire import format_amount, parse_amount
    sold = next(item for item in sale["lines"] if item["lineId"] == line_id)
    net = parse_amount(sold["amount"]) - parse_amount(sold["discount"])
    return format_amount(net - net * 2 // 3)


def _clawed(sale: dict, line_id: str) -> str:
    from app.wire import format_amount, parse_amount
    sold = next(item for item in sale["lines"] if item["lineId"] == line_id)
    return format_amount(parse_amount(sold["accrual"]) // 3)


def test_the_ledger_lists_empty_periods_and_months(client, tenant):
    items = report(client, tenant, "ledger", **{"from": "2026-01-30", "to": "2026-03-02",
                                                "groupBy": "month"}).get_json()["items"]
    assert [item["period"] for item in items] == ["2026-01", "2026-02", "2026-03"]
    assert all(value == "0.00" for item in items for key, value in item.items() if key != "period")


def test_a_moscow_day_begins_at_21_utc(client, tenant, shop, register):
    """A sale at 22:00 UTC is the next Moscow day's."""
    anna = shop.customer()
    session = register.open(anna)
    quote = register.quote(session["id"], [line("1", "10.00")])
    register.commit(session["id"], quote["id"])
    from sqlalchemy import update

    from app.models import Sale
    late = utcnow().replace(hour=22, minute=0) - timedelta(days=2)
    shop.arrange(lambda s: s.execute(update(Sale).where(Sale.company_id == tenant.company_id)
                                     .values(committed_at=late)))
    utc_day, moscow = late.date().isoformat(), moscow_day(late).isoformat()
    assert utc_day != moscow
    items = report(client, tenant, "registers", **{"from": utc_day, "to": moscow,
                                                   "groupBy": "day"}).get_json()["items"]
    assert [(item["key"], item["sales"]) for item in items] == [(moscow, 1)]


@pytest.mark.parametrize("query, where", [
    ({"to": "2026-01-01"}, "from"),
    ({"from": "2026-01-01"}, "to"),
    ({"from": "2026-13-01", "to": "2026-01-01"}, "from"),
    ({"from": "2026-01-02", "to": "2026-01-01"}, "to"),
    ({"from": "2026-01-01", "to": "2027-01-02"}, "to"),  # 366 days and one
    # Moscow's midnight of 0001-01-01 is in year 0 in UTC; the day after 9999-12-31 is none.
    ({"from": "0001-01-01", "to": "0001-01-01"}, "from"),
    ({"from": "9999-12-31", "to": "9999-12-31"}, "from"),
    # Only YYYY-MM-DD: other ISO 8601 forms of a day are refused.
    ({"from": "20260101", "to": "2026-01-01"}, "from"),
    ({"from": "2026-01-01", "to": "2026-W01-4"}, "to"),
])
def test_a_period_that_is_not_one_is_a_422(client, tenant, query, where):
    body = report(client, tenant, "ledger", expect=422, **query).get_json()
    assert body["detail"][0]["loc"] == ["query", where]


def test_the_longest_period_is_366_days(client, tenant):
    items = report(client, tenant, "ledger", **{"from": "2028-01-01", "to": "2028-12-31"})
    assert len(items.get_json()["items"]) == 366


def test_a_bad_grouping_is_a_422(client, tenant):
    body = report(client, tenant, "registers", expect=422,
                  **{"from": "2026-01-01", "to": "2026-01-01", "groupBy": "week"}).get_json()
    assert body["detail"][0]["loc"] == ["query", "groupBy"]


@pytest.mark.parametrize("name", ["liability", "ledger", "registers", "program"])
def test_reports_need_their_scope(client, tenant, name):
    key = tenant.key_with("program:read", "customers:read")
    response = client.get(f"/v1/reports/{name}?from=2026-01-01&to=2026-01-01",
                          headers=tenant.headers(key))
    assert response.status_code == 403
    assert response.get_json()["code"] == "insufficient_scope"
    assert 'scope="reports:read"' in response.headers["WWW-Authenticate"]


def test_csv_when_accept_prefers_it(client, tenant, shop, register):
    anna = shop.customer()
    register.checkout(anna, [line("1", "12.50")])
    day = today()
    response = report(client, tenant, "registers", accept="text/csv, application/json;q=0.5",
                      **{"from": day, "to": day, "groupBy": "store"})
    assert response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="registers-{day}-{day}.csv"')
    rows = list(csv.reader(io.StringIO(response.get_data().decode("utf-8-sig"))))
    assert rows[0] == ["key", "name", "sales", "loyaltySales", "offlineSales", "amount",
                       "discount", "accrued", "returns", "returnedAmount", "clawedBack"]
    assert rows[1][:6] == [shop.store_id, "Corner shop", "1", "1", "0", "12.50"]
    assert len(rows) == 2

    figures = report(client, tenant, "liability", accept="text/csv")
    rows = list(csv.reader(io.StringIO(figures.get_data().decode("utf-8-sig"))))
    shown = report(client, tenant, "liability").get_json()
    assert rows[0] == ["figure", "value"] and rows[2] == ["available", shown["available"]]
    assert len([row for row in rows if row[0].startswith("expiring.")]) == 12

    assert report(client, tenant, "liability", accept="*/*").mimetype == "application/json"


def test_reports_see_only_their_company(client, tenant, other_tenant, shop, register):
    register.checkout(shop.customer("5.00"), [line("1", "10.00")])
    day = today()
    assert report(client, other_tenant, "registers",
                  **{"from": day, "to": day}).get_json()["items"] == []
    assert report(client, other_tenant, "liability").get_json()["available"] == "0.00"
