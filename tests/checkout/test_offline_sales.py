"""Sales a register made offline and sent later: who and when, what they earn, and the one
sale a receipt may have, online or offline."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import Customer, LedgerEntry
from app.wire import format_timestamp
from tests.checkout.conftest import line
from tests.program.helpers import change_program, create_campaign, moment

RECEIPT = [line("1", "100.00", sku="LATTE"), line("2", "300.00", sku="BUN", quantity="2")]


def ago(**delta) -> str:
    return format_timestamp(utcnow() - timedelta(**delta))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_an_offline_sale_earns_without_redeeming_and_says_when_it_was_made(register, shop):
    shop.program(accrual_delay_days=14)
    customer = shop.customer("500.00")
    sold_at = ago(hours=2)
    sale = register.offline({"customerId": customer}, RECEIPT, sold_at, "R-OFF-1")
    assert sale["offline"] is True and sale["checkoutSessionId"] is None
    assert (sale["redeemed"], sale["accrued"], sale["totalAmount"]) == ("0.00", "20.00", "400.00")
    assert sale["soldAt"] == sold_at and at(sale["committedAt"]) > at(sold_at)
    # Pending until soldAt + accrualDelayDays, not from the moment it arrived.
    assert at(sale["accrualAvailableAt"]) == at(sold_at) + timedelta(days=14)
    assert shop.account(customer) == {"available": "500.00", "pending": "20.00",
                                      "reserved": "0.00"}
    assert register.lookup("R-OFF-1") == sale
    assert shop.verify() == []


def test_an_online_sale_says_it_was_not_offline(register, shop):
    sale = register.checkout(shop.customer(), RECEIPT)["sale"]
    assert sale["offline"] is False and sale["soldAt"] == sale["committedAt"]


def test_an_accrual_whose_delay_has_passed_is_active_and_its_lot_lives_from_then(register, shop):
    shop.program(accrual_delay_days=1, points_lifetime_days=30)
    customer = shop.customer()
    sold_at = ago(days=3)
    sale = register.offline({"customerId": customer}, RECEIPT, sold_at)
    assert at(sale["accrualAvailableAt"]) == at(sold_at) + timedelta(days=1)
    assert shop.account(customer)["available"] == "20.00"
    activity = register.client.get(f"/v1/customers/{customer}/reward-activities",
                                    headers=shop.tenant.headers()).get_json()["items"]
    accrual = next(item for item in activity if item["type"] == "ACCRUAL")
    assert accrual["status"] == "ACTIVE"
    assert at(accrual["expiresAt"]) == at(sold_at) + timedelta(days=1 + 30)


@pytest.mark.parametrize("way", ["phone", "cardNumber"])
def test_the_customer_may_be_named_by_phone_or_card_number(register, shop, way):
    customer = shop.customer()
    row = shop.arrange(lambda s: s.scalar(select(Customer).where(Customer.id == customer)))
    value = {"phone": row.phone, "cardNumber": row.card_number}[way]
    sale = register.offline({way: value}, RECEIPT, ago(minutes=40))
    assert sale["customerId"] == customer


@pytest.mark.parametrize("customer", [{}, {"phone": "+79990000000", "customerId": "x"}])
def test_none_or_two_ways_of_naming_the_customer_is_a_422(register, shop, customer):
    register.offline(customer, RECEIPT, ago(minutes=5), expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "customer"]


def test_an_unknown_or_another_companys_customer_is_a_404(register, shop, app, other_tenant):
    from tests.checkout.conftest import build_shop
    theirs = build_shop(app, other_tenant).customer()
    for customer in ({"customerId": theirs}, {"cardNumber": "2000000000008"}):
        register.offline(customer, RECEIPT, ago(minutes=5), expect=404)


def test_when_a_sale_was_made_is_bounded(register, shop):
    customer = {"customerId": shop.customer()}
    register.offline(customer, RECEIPT, moment(minutes=6), expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["body", "soldAt"]
    register.offline(customer, RECEIPT, moment(minutes=4))  # a register's clock a little ahead
    register.offline(customer, RECEIPT, "2026-11-28T14:03:00", expect=422)  # no offset
    register.offline(customer, RECEIPT, ago(days=7, minutes=1), expect=409)
    assert register.last.get_json()["code"] == "offline_sale_too_old"
    change_program(register.client, shop.tenant, offlineSaleWindowDays=10)
    register.offline(customer, RECEIPT, ago(days=7, minutes=1))
    change_program(register.client, shop.tenant, offlineSaleWindowDays=0)
    register.offline(customer, RECEIPT, ago(minutes=1), expect=409)
    assert register.last.get_json()["code"] == "offline_sales_disabled"


def test_the_window_is_a_program_setting(client, shop):
    assert client.get("/v1/program", headers=shop.tenant.headers()).get_json()[
        "offlineSaleWindowDays"] == 7
    for days in (-1, 31, "7"):
        response = client.patch("/v1/program", json={"offlineSaleWindowDays": days},
                                headers=shop.tenant.headers())
        assert response.status_code == 422
    assert change_program(client, shop.tenant, offlineSaleWindowDays=30)[
        "offlineSaleWindowDays"] == 30


def test_the_operator_sets_the_window(app, shop):
    runner = app.test_cli_runner()
    result = runner.invoke(args=["programs", "set", shop.tenant.company_id,
                                 "--offline-sale-window-days", "3"])
    assert result.exit_code == 0, result.output
    assert "offline sales 3 d" in result.output
    refused = runner.invoke(args=["programs", "set", shop.tenant.company_id,
                                  "--offline-sale-window-days", "31"])
    assert refused.exit_code == 2


def test_the_register_is_required_and_may_have_been_disabled_since(register, shop):
    customer = {"customerId": shop.customer()}
    shop.terminal("DISABLED")
    sale = register.offline(customer, RECEIPT, ago(hours=1))
    assert sale["offline"] is True
    register.pos = False
    register.offline(customer, RECEIPT, ago(hours=1), expect=422)
    assert register.last.get_json()["detail"][0]["loc"] == ["header", "X-Loyalty-Pos-Key"]
    register.pos = True
    register.shop.pos_key, known = "no-such-register", register.shop.pos_key
    register.offline(customer, RECEIPT, ago(hours=1), expect=403)
    assert register.last.get_json()["code"] == "terminal_inactive"
    register.shop.pos_key = known
    # Everything else still wants an active register.
    register.open(customer["customerId"], expect=403)


def test_a_stopped_subscription_refuses_it_as_a_commit(register, shop):
    shop.subscription(status="SUSPENDED")
    register.offline({"customerId": shop.customer()}, RECEIPT, ago(hours=1), expect=403)
    assert register.last.get_json()["code"] == "subscription_inactive"


def test_a_receipt_has_one_sale_online_or_offline(register, shop):
    customer = shop.customer()
    online = register.checkout(customer, RECEIPT)["sale"]
    refused = register.offline({"customerId": customer}, RECEIPT, ago(hours=1),
                               online["externalReceiptId"], expect=409)
    assert (refused["code"], refused["saleId"]) == ("receipt_already_committed", online["id"])

    offline = register.offline({"customerId": customer}, RECEIPT, ago(hours=1), "R-OFF-2")
    refused = register.open(customer, "R-OFF-2", expect=409)
    assert (refused["code"], refused["saleId"]) == ("receipt_already_committed", offline["id"])


def test_a_session_opened_before_does_not_stop_it_but_cannot_commit_after(register, shop):
    customer = shop.customer("100.00")
    session = register.open(customer, "R-OFF-3")
    quote = register.quote(session["id"], RECEIPT)
    offline = register.offline({"customerId": customer}, RECEIPT, ago(minutes=30), "R-OFF-3")
    refused = register.commit(session["id"], quote["id"], expect=409)
    assert (refused["code"], refused["saleId"]) == ("receipt_already_committed", offline["id"])


def test_a_replay_answers_the_same_sale_once(register, shop):
    customer = shop.customer()
    sold_at = ago(hours=1)
    first = register.offline({"customerId": customer}, RECEIPT, sold_at, "R-OFF-4", key="offline-key-1")
    again = register.offline({"customerId": customer}, RECEIPT, sold_at, "R-OFF-4", key="offline-key-1")
    assert register.last.headers.get("Idempotent-Replayed") == "true" and again == first
    assert shop.account(customer)["available"] == "20.00"


def test_campaigns_count_as_they_ran_when_the_sale_was_made(client, register, shop):
    ended = create_campaign(client, shop.tenant, accrualPercent="10", skus=["LATTE"],
                            startsAt=moment(days=-3), endsAt=moment(hours=-1))
    create_campaign(client, shop.tenant, accrualPercent="20", skus=["BUN"],
                    startsAt=moment(minutes=-30), endsAt=moment(days=3))
    sale = register.offline({"customerId": shop.customer()}, RECEIPT, ago(hours=2))
    assert [(item["accrualPercent"], item["campaignId"]) for item in sale["lines"]] == [
        ("10.00", ended["id"]), ("5.00", None)]
    assert sale["accrued"] == "25.00"
    # A quote now, from the same cached campaigns: the ended one no longer applies.
    quote = register.quote(register.open(shop.customer())["id"], RECEIPT)
    assert [item["accrualPercent"] for item in quote["lines"]] == ["5.00", "20.00"]


def test_the_sale_counts_toward_tiers_at_when_it_was_made(client, register, shop):
    change_program(client, shop.tenant, tiers=[
        {"name": "Base", "minSpend": "0.00", "accrualPercent": "5"},
        {"name": "Gold", "minSpend": "300.00", "accrualPercent": "10"}], tierWindowDays=1)
    customer = shop.customer()
    # Made before the window began: earns, but adds nothing to the spend.
    register.offline({"customerId": customer}, RECEIPT, ago(days=2))
    tier = client.get(f"/v1/customers/{customer}/reward-account",
                      headers=shop.tenant.headers()).get_json()["tier"]
    assert (tier["name"], tier["spend"]) == ("Base", "0.00")
    # The sale that crosses the threshold earns at the old rate, as a commit's.
    sale = register.offline({"customerId": customer}, RECEIPT, ago(hours=3))
    assert sale["accrued"] == "20.00"
    tier = client.get(f"/v1/customers/{customer}/reward-account",
                      headers=shop.tenant.headers()).get_json()["tier"]
    assert (tier["name"], tier["spend"]) == ("Gold", "400.00")
    assert shop.events("customer.tier_changed")[-1]["to"] == "Gold"


def test_it_is_returned_and_clawed_back_as_any_sale(register, shop):
    customer = shop.customer()
    sale = register.offline({"customerId": customer}, RECEIPT, ago(hours=1))
    returned = register.return_lines(sale["id"], [("2", "2")])
    assert (returned["reversedAccrual"], returned["saleState"]) == ("15.00", "PARTIALLY_RETURNED")
    assert shop.account(customer)["available"] == "5.00"
    assert shop.verify() == []


def test_sale_committed_says_offline_and_when(register, shop):
    sold_at = ago(minutes=38)
    sale = register.offline({"customerId": shop.customer()}, RECEIPT, sold_at)
    event = shop.events("sale.committed")[-1]
    assert (event["id"], event["offline"], event["soldAt"]) == (sale["id"], True, sold_at)


def test_the_ledger_keeps_the_moment_it_arrived(register, shop):
    customer = shop.customer()
    sale = register.offline({"customerId": customer}, RECEIPT, ago(days=2))
    created = shop.arrange(lambda s: s.scalar(select(LedgerEntry.created_at).where(
        LedgerEntry.sale_id == sale["id"])))
    assert created.astimezone(timezone.utc) >= at(sale["committedAt"]) - timedelta(seconds=1)
