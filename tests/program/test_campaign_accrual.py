"""Which percent a quote line earns (docs/api.md#tiers): the customer's, or the largest applying
campaign's, matched by store, sku and the catalog's category; kept on the sale's lines."""
from __future__ import annotations

import pytest
from sqlalchemy import event

from app.services.program import matching
from testbed.tenants import make_tenant
from tests.checkout.conftest import Register, build_shop, line
from tests.program.helpers import change_program, create_campaign, moment

RECEIPT = [line("1", "100.00", sku="LATTE"), line("2", "100.00", sku="BUN"),
           line("3", "100.00")]


def percents(quote: dict) -> list[tuple[str, str | None]]:
    return [(item["accrualPercent"], item["campaignId"]) for item in quote["lines"]]


def quoted(register, customer: str, lines=RECEIPT) -> dict:
    return register.quote(register.open(customer)["id"], lines)


def test_without_campaigns_every_line_earns_the_programs_percent(register, shop):
    quote = quoted(register, shop.customer())
    assert percents(quote) == [("5.00", None)] * 3
    assert quote["accrual"] == "15.00"


def test_a_campaign_naming_nothing_covers_every_line(client, register, shop):
    campaign = create_campaign(client, shop.tenant, accrualPercent="8")
    quote = quoted(register, shop.customer())
    assert percents(quote) == [("8.00", campaign["id"])] * 3
    assert [item["accrual"] for item in quote["lines"]] == ["8.00"] * 3


def test_a_campaign_matches_by_sku_or_by_the_catalog_category(client, register, shop):
    shop.catalog({"LATTE": (True, True), "BUN": (True, True)}, categories={"BUN": "bakery"})
    by_sku = create_campaign(client, shop.tenant, accrualPercent="9", skus=["LATTE"])
    by_category = create_campaign(client, shop.tenant, accrualPercent="7", categories=["bakery"])
    quote = quoted(register, shop.customer())
    assert percents(quote) == [("9.00", by_sku["id"]), ("7.00", by_category["id"]), ("5.00", None)]


def test_a_category_counts_only_in_the_stores_catalog(client, register, shop):
    create_campaign(client, shop.tenant, accrualPercent="7", categories=["bakery"])
    other_store = _store(client, shop)
    shop.catalog({"BUN": (True, True)}, store_id=other_store, categories={"BUN": "bakery"})
    assert percents(quoted(register, shop.customer()))[1] == ("5.00", None)


def _store(client, shop) -> str:
    response = client.post("/v1/stores", json={
        "name": "Second", "address": "Mira 2", "city": "Moscow", "latitude": 55.7,
        "longitude": 37.6}, headers=shop.tenant.headers())
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def test_a_campaign_for_other_stores_does_not_apply(client, register, shop):
    create_campaign(client, shop.tenant, accrualPercent="9", storeIds=[_store(client, shop)])
    here = create_campaign(client, shop.tenant, accrualPercent="6", storeIds=[shop.store_id])
    assert percents(quoted(register, shop.customer())) == [("6.00", here["id"])] * 3
    # A session without a store: a campaign naming stores never applies.
    register.pos = False
    session = register.open(shop.customer())
    assert percents(register.quote(session["id"], RECEIPT)) == [("5.00", None)] * 3


def test_the_largest_percent_wins_and_campaigns_do_not_add_up(client, register, shop):
    create_campaign(client, shop.tenant, accrualPercent="7")
    largest = create_campaign(client, shop.tenant, accrualPercent="11", skus=["LATTE"])
    create_campaign(client, shop.tenant, accrualPercent="9", skus=["LATTE"])
    quote = quoted(register, shop.customer())
    assert percents(quote)[0] == ("11.00", largest["id"])
    assert quote["lines"][0]["accrual"] == "11.00"


def test_a_smaller_campaign_leaves_the_customers_percent(client, register, shop):
    create_campaign(client, shop.tenant, accrualPercent="3")
    create_campaign(client, shop.tenant, accrualPercent="5")  # equal: still the customer's own
    assert percents(quoted(register, shop.customer())) == [("5.00", None)] * 3


def test_only_running_active_campaigns_apply(client, register, shop):
    create_campaign(client, shop.tenant, accrualPercent="20", startsAt=moment(hours=1),
                    endsAt=moment(days=1))
    create_campaign(client, shop.tenant, accrualPercent="30", startsAt=moment(days=-3),
                    endsAt=moment(seconds=-1))
    paused = create_campaign(client, shop.tenant, accrualPercent="40")
    client.patch(f"/v1/campaigns/{paused['id']}", json={"active": False},
                 headers=shop.tenant.headers())
    deleted = create_campaign(client, shop.tenant, accrualPercent="50")
    client.delete(f"/v1/campaigns/{deleted['id']}", headers=shop.tenant.headers())
    assert percents(quoted(register, shop.customer())) == [("5.00", None)] * 3


def test_an_item_that_does_not_accrue_earns_nothing_under_a_campaign(client, register, shop):
    shop.catalog({"LATTE": (True, False)})
    campaign = create_campaign(client, shop.tenant, accrualPercent="10")
    quote = quoted(register, shop.customer())
    assert quote["lines"][0]["accrual"] == "0.00"
    assert percents(quote)[0] == ("10.00", campaign["id"])


def test_the_sale_keeps_each_lines_percent_and_campaign(client, register, shop):
    campaign = create_campaign(client, shop.tenant, accrualPercent="10", skus=["LATTE"])
    customer = shop.customer("100.00")
    done = register.checkout(customer, RECEIPT)
    sale, quote = done["sale"], done["quote"]
    assert [(item["accrualPercent"], item["campaignId"]) for item in sale["lines"]] == [
        ("10.00", campaign["id"]), ("5.00", None), ("5.00", None)]
    # 30 % of each line redeemed (90.00 of the 100.00 balance): each pays 70.00.
    assert [item["accrual"] for item in sale["lines"]] == ["7.00", "3.50", "3.50"]
    assert sale["accrued"] == quote["accrual"] == "14.00"
    looked_up = register.lookup(sale["externalReceiptId"])
    assert looked_up["lines"] == sale["lines"]


def test_a_campaign_change_reaches_the_next_quote(app, client, register, shop):
    """The campaigns are cached per company; a change moves the program's version, and the next
    quote reads them again, once."""
    campaign = create_campaign(client, shop.tenant, accrualPercent="10")
    customer = shop.customer()
    assert percents(quoted(register, customer))[0] == ("10.00", campaign["id"])
    client.patch(f"/v1/campaigns/{campaign['id']}", json={"active": False},
                 headers=shop.tenant.headers())
    with _statements(app) as seen:
        assert percents(quoted(register, customer))[0] == ("5.00", None)
    reloads = [sql for sql in seen if "FROM campaigns" in sql]
    assert len(reloads) == 1
    with _statements(app) as seen:
        quoted(register, customer)
    assert not [sql for sql in seen if "FROM campaigns" in sql]
    bigger = create_campaign(client, shop.tenant, accrualPercent="12")
    assert percents(quoted(register, customer))[0] == ("12.00", bigger["id"])
    change_program(client, shop.tenant, accrualPercent="15")
    assert percents(quoted(register, customer))[0] == ("15.00", None)


def test_a_change_reads_again_only_the_lists_of_campaigns_the_process_did_not_hold(
        app, client, register, shop):
    """A campaign's skus, categories and stores are fixed once made, so the first quote after
    a rename, a pause or a new end reads no campaign's lists, and after a campaign is made or
    resumed it reads that campaign's alone (docs/api.md#tiers: the first quote after a change is
    cheap whatever the other campaigns name)."""
    shop.catalog({"LATTE": (True, True), "BUN": (True, True)}, categories={"BUN": "bakery"})
    by_sku = create_campaign(client, shop.tenant, accrualPercent="9", skus=["LATTE"])["id"]
    by_category = create_campaign(client, shop.tenant, accrualPercent="7",
                                  categories=["bakery"])["id"]
    paused = create_campaign(client, shop.tenant, accrualPercent="8", skus=["BUN"])["id"]
    customer = shop.customer()
    assert percents(quoted(register, customer)) == [("9.00", by_sku), ("8.00", paused),
                                                    ("5.00", None)]
    for campaign, body in ((by_sku, {"name": "Renamed"}), (paused, {"active": False}),
                           (by_category, {"endsAt": moment(days=9)})):
        response = client.patch(f"/v1/campaigns/{campaign}", json=body,
                                headers=shop.tenant.headers())
        assert response.status_code == 200, response.get_json()

    def lists_read(seen) -> list[str]:
        """Whose lists the quote read: the campaigns its reads of lists name, or all of them
        for a read by the company alone."""
        named = []
        for sql, parameters in seen:
            if "FROM campaigns" in sql and "skus" in sql:
                named += [campaign for campaign in (by_sku, by_category, paused, newer)
                          if campaign in repr(parameters)] or ["every campaign"]
        return named

    newer = "none yet"
    with _statements(app, parameters=True) as seen:
        assert percents(quoted(register, customer)) == [("9.00", by_sku), ("7.00", by_category),
                                                        ("5.00", None)]
    assert [sql for sql, _ in seen if "FROM campaigns" in sql] and not lists_read(seen)
    newer = create_campaign(client, shop.tenant, accrualPercent="12", skus=["LATTE"])["id"]
    with _statements(app, parameters=True) as seen:
        assert percents(quoted(register, customer))[0] == ("12.00", newer)
    assert lists_read(seen) == [newer]
    # A paused campaign was let go; resumed, its lists are read again, and they still apply.
    client.patch(f"/v1/campaigns/{paused}", json={"active": True}, headers=shop.tenant.headers())
    with _statements(app, parameters=True) as seen:
        assert percents(quoted(register, customer))[1] == ("8.00", paused)
    assert lists_read(seen) == [paused]


class _statements:
    def __init__(self, app, parameters: bool = False):
        self.engine, self.seen, self.parameters = app.extensions["engine"], [], parameters

    def _count(self, conn, cursor, statement, parameters, *args):
        self.seen.append((statement, parameters) if self.parameters else statement)

    def __enter__(self):
        event.listen(self.engine, "before_cursor_execute", self._count)
        return self.seen

    def __exit__(self, *exc):
        event.remove(self.engine, "before_cursor_execute", self._count)


@pytest.fixture
def process_cache():
    """The process's campaign cache, emptied, with its budget given back afterwards."""
    cache, budget = matching._cache, matching._cache.budget
    cache.clear()
    yield cache
    cache.budget = budget
    cache.clear()


def test_many_companies_campaigns_stay_within_the_process_budget(app, process_cache):
    """docs/api.md#tiers: whatever any number of companies do, the process holds at most its budget
    of campaigns (64 MiB; here two and a half companies' worth): the company quoted least
    recently is dropped, and its next quote reads its campaigns again."""
    shops, campaigns = [], []
    for index in range(6):
        shop = build_shop(app, make_tenant(app, f"Shop {index}"))
        skus = ["LATTE", *(f"SKU-{index}-{i:05d}" for i in range(500))]
        campaigns.append(create_campaign(app.test_client(), shop.tenant, skus=skus,
                                         accrualPercent=f"{10 + index}")["id"])
        shops.append(shop)
    for index, shop in enumerate(shops):
        quote = quoted(Register(app.test_client(), shop), shop.customer())
        assert percents(quote)[0] == (f"{10 + index}.00", campaigns[index])
        if index == 0:
            process_cache.budget = process_cache.held * 5 // 2
        assert process_cache.held <= process_cache.budget
    held = process_cache.companies()
    assert held == [shops[4].tenant.company_id, shops[5].tenant.company_id]
    first = shops[0]
    assert percents(quoted(Register(app.test_client(), first), first.customer()))[0] == (
        "10.00", campaigns[0])
    assert process_cache.companies() == [shops[5].tenant.company_id, first.tenant.company_id]
