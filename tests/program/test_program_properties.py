"""docs/api.md#money's money rules still hold line by line with tiers and campaigns (hypothesis),
through the checkout services: each line earns floor((amount − discount) × its percent), its percent
is the largest of the customer's (tier, else program) and the applying campaigns', the campaign
is named only when it gave the percent, and Σ line discounts is the discount."""
from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.database.engine import utcnow
from app.models import RewardAccount
from app.services.checkout import holds, quotes, sales, sessions
from app.services.checkout.pricing import BP_SCALE
from app.services.program import campaigns as campaign_service
from app.services.program import settings as program_settings
from app.services.rewards import tiers as tier_rules
from app.services.rewards import verification
from testbed.tenants import make_tenant
from tests.checkout.conftest import build_shop

# sku → (redeemable, accruable, category)
CATALOG = {"BREAD": (True, True, "bakery"), "MILK": (True, True, "dairy"),
           "TOBACCO": (False, False, None), "BOOK": (False, True, "books")}
SKUS = [*CATALOG, "FREE", None]
PROPERTY = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

percent = st.integers(0, BP_SCALE)
tier_lists = st.lists(st.tuples(st.integers(1, 500_000), percent), max_size=3,
                      unique_by=lambda tier: tier[0])
campaign_specs = st.lists(st.tuples(
    percent, st.lists(st.sampled_from(list(CATALOG) + ["FREE"]), max_size=2, unique=True),
    st.lists(st.sampled_from(["bakery", "dairy", "books"]), max_size=2, unique=True),
    st.booleans()), max_size=4)
receipt_lines = st.lists(st.tuples(st.sampled_from(SKUS), st.integers(0, 500_000),
                                   st.integers(1, 5)), min_size=1, max_size=6)


def _shop(app, drawn_tiers, program_bp):
    shop = build_shop(app, make_tenant(app, "Property shop"))
    company = shop.tenant.company_id
    shop.catalog({sku: flags[:2] for sku, flags in CATALOG.items()},
                 categories={sku: flags[2] for sku, flags in CATALOG.items() if flags[2]})
    tier_list = [tier_rules.Tier("Base", 0, program_bp)] + [
        tier_rules.Tier(f"T{i}", spend, bp) for i, (spend, bp) in enumerate(drawn_tiers)]
    shop.arrange(lambda s: program_settings.change_program(
        s, company, now=utcnow(), accrual_bp=program_bp,
        tier_list=tier_list if drawn_tiers else []))
    return shop, tuple(sorted(tier_list, key=lambda tier: tier.min_spend)) if drawn_tiers else ()


def _campaigns(shop, specs):
    now = utcnow()
    made = []
    for bp, skus, categories, here in specs:
        made.append(shop.arrange(lambda s: campaign_service.create_campaign(
            s, shop.tenant.company_id, name="C", starts_at=now - timedelta(hours=1),
            ends_at=now + timedelta(days=1), accrual_bp=bp, skus=skus, categories=categories,
            store_ids=[shop.store_id] if here else [], now=now)))
    return [(c.id, c.accrual_bp, set(skus), set(categories)) for c, (_, skus, categories, _)
            in zip(made, specs)]


def _best_campaign_bp(campaigns, sku) -> int:
    category = CATALOG.get(sku, (None, None, None))[2]
    return max([bp for _, bp, skus, categories in campaigns
                if (not skus and not categories) or sku in skus or category in categories],
               default=0)


def _check_lines(lines, drawn, customer_bp, campaigns):
    by_id = {campaign[0]: campaign for campaign in campaigns}
    for (sku, amount, _), line in zip(drawn, lines):
        best = _best_campaign_bp(campaigns, sku)
        assert line.accrual_bp == max(customer_bp, best)
        accruable = CATALOG.get(sku, (True, True))[1]
        expected = (amount - line.discount) * line.accrual_bp // BP_SCALE if accruable else 0
        assert line.accrual == expected
        if line.campaign_id is None:
            assert best <= customer_bp
        else:
            assert by_id[line.campaign_id][1] == best > customer_bp


@PROPERTY
@given(drawn_tiers=tier_lists, program_bp=percent, specs=campaign_specs, drawn=receipt_lines,
       balance=st.integers(0, 300_000), prior_spend=st.integers(0, 600_000), hold=st.booleans())
def test_each_line_earns_its_percent_at_quote_and_commit(app, drawn_tiers, program_bp, specs,
                                                         drawn, balance, prior_spend, hold):
    shop, tier_list = _shop(app, drawn_tiers, program_bp)
    company = shop.tenant.company_id
    campaigns = _campaigns(shop, specs)
    customer = shop.customer(f"{balance // 100}.{balance % 100:02d}")

    def with_spend(session):
        account = session.scalar(select(RewardAccount).where(
            RewardAccount.company_id == company, RewardAccount.customer_id == customer))
        account.spend, account.spend_oldest_at = prior_spend, utcnow()
    shop.arrange(with_spend)
    customer_bp = tier_rules.customer_accrual_bp(tier_list, prior_spend, program_bp)

    now = utcnow()
    session = shop.arrange(lambda s: sessions.create_session(
        s, company, external_receipt_id="R", customer_id=customer, now=now, ttl_seconds=86400,
        store_id=shop.store_id))
    lines = [{"line_id": f"L{i}", "sku": sku, "name": None, "quantity": units * 1000,
              "price": amount, "amount": amount} for i, (sku, amount, units) in enumerate(drawn)]
    quote = shop.arrange(lambda s: quotes.quote_receipt(
        s, company, session.id, lines=lines, redeem_amount=None, now=now))
    assert sum(line.discount for line in quote.lines) == quote.discount
    assert quote.accrual == sum(line.accrual for line in quote.lines)
    _check_lines(quote.lines, drawn, customer_bp, campaigns)

    if hold and quote.discount:
        shop.arrange(lambda s: holds.place_hold(s, company, session.id, quote_id=quote.id,
                                                amount=quote.discount, now=now))
    sale = shop.arrange(lambda s: sales.commit_sale(s, company, session.id, quote_id=quote.id,
                                                    now=now))
    assert sum(line.discount for line in sale.lines) == sale.redeemed
    assert sale.accrued == sum(line.accrual for line in sale.lines)
    _check_lines(sale.lines, drawn, customer_bp, campaigns)
    spend_after = prior_spend + sum(amount - line.discount for (_, amount, _), line
                                    in zip(drawn, sale.lines))
    stored = shop.arrange(lambda s: s.scalar(select(RewardAccount.spend).where(
        RewardAccount.company_id == company, RewardAccount.customer_id == customer)))
    assert stored == spend_after
    assert shop.arrange(lambda s: [str(d) for d in verification.verify(s, company)]) == []
