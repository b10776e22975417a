"""Tiers (docs/api.md#tiers): the spend kept on the account, the tier's percent at quote and commit,
`customer.tier_changed` at commit, return and as old sales leave the window."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import RewardAccount, Sale
from app.services.rewards import spend, verification
from tests.checkout.conftest import line
from tests.program.helpers import change_program
from worker.context import job_session
from worker.periodic import refresh_spends

TIERS = [{"name": "Base", "minSpend": "0", "accrualPercent": "3"},
         {"name": "Silver", "minSpend": "150", "accrualPercent": "6"},
         {"name": "Gold", "minSpend": "400", "accrualPercent": "10"}]
TWO_CUPS = [line("1", "200.00", sku="LATTE", quantity="2", price="100.00")]


def tier(client, shop, customer: str) -> dict | None:
    response = client.get(f"/v1/customers/{customer}/reward-account", headers=shop.tenant.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()["tier"]


def spend_differences(shop) -> list[str]:
    return shop.arrange(lambda s: [str(d) for d in verification.verify_spend(s, utcnow())])


def moves(shop) -> list[tuple]:
    return [(event["customerId"], event["from"], event["to"])
            for event in shop.events("customer.tier_changed")]


def test_without_tiers_the_account_has_no_tier(client, shop):
    assert tier(client, shop, shop.customer()) is None


def test_a_sale_that_crosses_a_threshold_earns_at_the_old_rate(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS)
    customer = shop.customer()
    assert tier(client, shop, customer) == {
        "name": "Base", "accrualPercent": "3.00", "spend": "0.00",
        "next": {"name": "Silver", "minSpend": "150.00", "remaining": "150.00"}}
    sale = register.checkout(customer, TWO_CUPS)["sale"]
    assert (sale["accrued"], sale["lines"][0]["accrualPercent"]) == ("6.00", "3.00")
    assert moves(shop) == [(customer, "Base", "Silver")]
    assert tier(client, shop, customer) == {
        "name": "Silver", "accrualPercent": "6.00", "spend": "200.00",
        "next": {"name": "Gold", "minSpend": "400.00", "remaining": "200.00"}}
    quote = register.quote(register.open(customer)["id"], [line("1", "100.00")])
    # The 6.00 earned pays part of it: 6 % of the 94.00 left.
    assert (quote["lines"][0]["accrualPercent"], quote["accrual"]) == ("6.00", "5.64")
    assert spend_differences(shop) == []


def test_the_spend_counts_what_was_paid_after_bonuses(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS)
    customer = shop.customer("1000.00")
    sale = register.checkout(customer, TWO_CUPS)["sale"]
    assert sale["redeemed"] == "60.00"  # 30 % of 200.00
    assert tier(client, shop, customer)["spend"] == "140.00"
    assert tier(client, shop, customer)["name"] == "Base"
    assert moves(shop) == [] and spend_differences(shop) == []


def test_the_tier_is_decided_again_at_commit(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS)
    customer = shop.customer()
    early = register.open(customer)
    early_quote = register.quote(early["id"], [line("1", "100.00")])
    assert early_quote["lines"][0]["accrualPercent"] == "3.00"
    register.checkout(customer, TWO_CUPS)  # Silver now
    sale = register.commit(early["id"], early_quote["id"])
    assert (sale["lines"][0]["accrualPercent"], sale["accrued"]) == ("6.00", "6.00")


def test_a_return_moves_the_customer_down_a_tier(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS)
    customer = shop.customer()
    sale = register.checkout(customer, TWO_CUPS)["sale"]
    register.return_lines(sale["id"], [("1", "1")])
    assert tier(client, shop, customer)["name"] == "Base"
    assert tier(client, shop, customer)["spend"] == "100.00"
    assert moves(shop) == [(customer, "Base", "Silver"), (customer, "Silver", "Base")]
    register.return_lines(sale["id"], [("1", "1")])
    assert tier(client, shop, customer)["spend"] == "0.00"
    assert len(moves(shop)) == 2 and spend_differences(shop) == []


def _age_sales(shop, customer: str, days: int) -> None:
    """The customer's sales were committed `days` earlier than they were."""
    def work(session):
        for sale in session.scalars(select(Sale).where(Sale.company_id == shop.tenant.company_id,
                                                       Sale.customer_id == customer)):
            sale.committed_at -= timedelta(days=days)
        account = session.scalar(select(RewardAccount).where(
            RewardAccount.company_id == shop.tenant.company_id, RewardAccount.customer_id == customer))
        account.spend_oldest_at -= timedelta(days=days)
    shop.arrange(work)


def _run_refresh(shop) -> int:
    with job_session(shop.app) as session:
        return refresh_spends(session, utcnow())


def test_the_periodic_job_notices_old_sales_leaving_the_window(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=30)
    customer, other = shop.customer(), shop.customer()
    register.checkout(customer, TWO_CUPS)
    register.checkout(other, TWO_CUPS)
    _age_sales(shop, customer, 31)
    # Until the job runs, the stored spend is the one its oldest sale gave: verify agrees.
    assert spend_differences(shop) == []
    assert _run_refresh(shop) == 1
    assert moves(shop)[-1] == (customer, "Silver", "Base")
    stored = shop.arrange(lambda s: s.execute(select(RewardAccount.spend, RewardAccount.spend_oldest_at)
                                              .where(RewardAccount.customer_id == customer)).one())
    assert tuple(stored) == (0, None)
    assert tier(client, shop, other)["name"] == "Silver"
    assert _run_refresh(shop) == 0 and spend_differences(shop) == []


def test_a_quote_after_old_sales_left_earns_at_the_lower_tier(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=30)
    customer = shop.customer()
    register.checkout(customer, TWO_CUPS)
    _age_sales(shop, customer, 31)
    quote = register.quote(register.open(customer)["id"], [line("1", "100.00")])
    assert quote["lines"][0]["accrualPercent"] == "3.00"
    assert moves(shop)[-1] == (customer, "Silver", "Base")


def test_a_return_of_a_sale_outside_the_window_leaves_the_spend(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=30)
    customer = shop.customer()
    old = register.checkout(customer, TWO_CUPS)["sale"]
    _age_sales(shop, customer, 31)
    register.checkout(customer, TWO_CUPS)  # the 6.00 earned on the old one pays part of it
    assert tier(client, shop, customer)["spend"] == "194.00"
    register.return_lines(old["id"], [("1", "2")])
    assert tier(client, shop, customer) == {
        "name": "Silver", "accrualPercent": "6.00", "spend": "194.00",
        "next": {"name": "Gold", "minSpend": "400.00", "remaining": "206.00"}}
    assert spend_differences(shop) == []


def test_a_window_of_all_time_and_a_changed_window(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=None)
    customer = shop.customer()
    register.checkout(customer, TWO_CUPS)
    _age_sales(shop, customer, 4000)
    assert _run_refresh(shop) == 0
    assert tier(client, shop, customer)["spend"] == "200.00"
    change_program(client, shop.tenant, tierWindowDays=3650)
    assert tier(client, shop, customer)["spend"] == "0.00"
    change_program(client, shop.tenant, tierWindowDays=None)
    assert tier(client, shop, customer)["spend"] == "200.00"
    assert spend_differences(shop) == []


def test_verify_finds_a_spend_that_is_not_the_definition(client, register, shop):
    customer = shop.customer()
    register.checkout(customer, TWO_CUPS)
    assert spend_differences(shop) == []
    shop.arrange(lambda s: s.execute(update(RewardAccount).where(
        RewardAccount.customer_id == customer).values(spend=RewardAccount.spend + 1)))
    assert spend_differences(shop) == [f"{shop.tenant.company_id} {customer} spend: stored 20001, "
                                       "computed 20000"]
    result = shop.app.test_cli_runner().invoke(args=["ledger", "verify", shop.tenant.company_id])
    assert result.exit_code == 1 and "spend: stored 20001" in result.output


def test_the_periodic_job_counts_over_the_window_in_force_once_it_has_locked(
        client, register, shop, monkeypatch):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=30)
    customer = shop.customer()
    register.checkout(customer, TWO_CUPS)
    _age_sales(shop, customer, 100)
    assert _run_refresh(shop) == 1 and tier(client, shop, customer)["spend"] == "0.00"
    read_before = shop.arrange(spend.programs)
    change_program(client, shop.tenant, tierWindowDays=365)
    # The job read the programs just before the window changed, and locks just after.
    monkeypatch.setattr(spend, "programs", lambda session: read_before)
    _run_refresh(shop)
    assert tier(client, shop, customer)["spend"] == "200.00"
    assert spend_differences(shop) == []


def test_a_window_change_is_counted_on_the_next_touch_or_by_the_job(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=30)
    read, left = shop.customer(), shop.customer()
    for customer in (read, left):
        register.checkout(customer, TWO_CUPS)
        _age_sales(shop, customer, 100)
    assert _run_refresh(shop) == 2
    moved = moves(shop)
    assert sorted(moved[-2:]) == sorted([(read, "Silver", "Base"), (left, "Silver", "Base")])
    change_program(client, shop.tenant, tierWindowDays=365)
    # Not recounted yet: each is held to the sales it counted, and verify agrees.
    assert spend_differences(shop) == []
    assert tier(client, shop, read)["spend"] == "200.00"  # a read recounts over 365 days
    assert _run_refresh(shop) == 1  # the job takes the other one
    assert tier(client, shop, left)["spend"] == "200.00" and _run_refresh(shop) == 0
    assert tier(client, shop, left)["name"] == "Silver"
    assert moves(shop) == moved  # the program moved them back, not their own spend
    assert spend_differences(shop) == []


def _kinds_after(shop, count: int) -> list[str]:
    """The company's event types recorded after the first `count`, in order."""
    from app.models import OutboxEvent
    return shop.arrange(lambda s: list(s.scalars(
        select(OutboxEvent.type).where(OutboxEvent.company_id == shop.tenant.company_id)
        .order_by(OutboxEvent.created_at).offset(count))))


def test_a_commit_notices_a_move_once_after_its_sale(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=30)
    customer = shop.customer()
    register.checkout(customer, TWO_CUPS)  # Silver

    def commit_after_old_sales_left(amount: str) -> list[str]:
        session = register.open(customer)
        quote = register.quote(session["id"], [line("1", amount)])  # the old sales still count
        _age_sales(shop, customer, 100)  # and leave the window before the commit
        recorded = len(_kinds_after(shop, 0))
        register.commit(session["id"], quote["id"])
        return _kinds_after(shop, recorded)

    # Down to Base (its 100.00 alone): one move, after the sale.
    assert commit_after_old_sales_left("100.00") == ["sale.committed", "customer.tier_changed"]
    register.checkout(customer, [line("1", "200.00")])  # Silver again
    # Silver before the old sales left, Silver with this sale alone: no move, not two.
    assert commit_after_old_sales_left("200.00") == ["sale.committed"]
    assert moves(shop) == [(customer, "Base", "Silver"), (customer, "Silver", "Base"),
                           (customer, "Base", "Silver")]
    assert spend_differences(shop) == []


def test_a_return_after_a_window_change_notices_no_move_the_change_made(client, register, shop):
    change_program(client, shop.tenant, tiers=TIERS, tierWindowDays=365)
    customer = shop.customer()
    old = register.checkout(customer, TWO_CUPS)["sale"]  # Silver
    _age_sales(shop, customer, 100)
    change_program(client, shop.tenant, tierWindowDays=30)  # the program moves them to Base
    moved = moves(shop)
    register.return_lines(old["id"], [("1", "1")])
    assert moves(shop) == moved
    assert tier(client, shop, customer)["spend"] == "0.00" and spend_differences(shop) == []
