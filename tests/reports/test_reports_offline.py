"""A sale made offline is placed by when it was made: its Moscow day, its register's store
and terminal, its cashier; the ledger keeps counting by when entries were written."""
from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from app.database.engine import utcnow
from app.services.reports.periods import moscow_day
from app.wire import format_timestamp
from tests.checkout.conftest import line
from tests.reports.test_reports_api import report

MOSCOW = ZoneInfo("Europe/Moscow")


def test_an_offline_sale_counts_on_its_day_under_its_register(client, tenant, shop, register):
    shop.program(accrual_delay_days=0)
    today = moscow_day(utcnow())
    yesterday = today - timedelta(days=1)
    late_last_night = datetime.combine(yesterday, time(23, 30), MOSCOW)
    customer = shop.customer()
    register.checkout(customer, [line("1", "10.00")])  # today, online
    sale = register.offline({"customerId": customer}, [line("1", "200.00")],
                            format_timestamp(late_last_night),
                            cashier={"externalId": "C-9", "name": "Night shift"})
    # The register was disabled since: the sale is still its.
    shop.terminal("DISABLED")

    def registers(group_by: str, day) -> list[dict]:
        return report(client, tenant, "registers", **{
            "from": day.isoformat(), "to": day.isoformat(), "groupBy": group_by}).get_json()["items"]

    [by_day] = registers("day", yesterday)
    assert (by_day["key"], by_day["sales"], by_day["offlineSales"], by_day["amount"]) == (
        yesterday.isoformat(), 1, 1, "200.00")
    [by_terminal] = registers("terminal", yesterday)
    assert (by_terminal["key"], by_terminal["offlineSales"]) == (shop.terminal_id, 1)
    [by_store] = registers("store", yesterday)
    assert by_store["key"] == shop.store_id
    [by_cashier] = registers("cashier", yesterday)
    assert (by_cashier["name"], by_cashier["sales"]) == ("Night shift", 1)
    [today_online] = registers("terminal", today)
    assert (today_online["sales"], today_online["offlineSales"]) == (1, 0)
    narrowed = report(client, tenant, "registers", **{
        "from": yesterday.isoformat(), "to": yesterday.isoformat(), "groupBy": "day",
        "terminalId": shop.terminal_id}).get_json()["items"]
    assert [item["sales"] for item in narrowed] == [1]

    program = report(client, tenant, "program", **{
        "from": yesterday.isoformat(), "to": yesterday.isoformat()}).get_json()
    assert (program["sales"], program["accrued"]) == (1, sale["accrued"])
    # The ledger counts its entries when they were written: today.
    ledger = report(client, tenant, "ledger", **{
        "from": yesterday.isoformat(), "to": today.isoformat()}).get_json()["items"]
    assert [item["accrued"] for item in ledger] == ["0.00", "10.50"]
