"""The customer's card page, reached by its token alone (docs/api.md#cards)."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import Company, Customer, LedgerEntry, RewardAccount
from app.services.cards.card_page import PAGE_STORE_LIMIT, display_amount
from app.services.cards.identifiers import is_valid_ean13
from testbed.cards import make_customer, make_pass_certificates, make_store, wallet_app

NBSP = "\u00a0"
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


def page(client, customer, **headers):
    """The card page in English (Russian is the default: test_card_page_languages.py)."""
    return client.get(f"/cards/{customer.card_token}",
                      headers={"Accept-Language": "en", **headers})


def text_of(html: str) -> str:
    """The page's visible words, roughly: tags dropped, whitespace folded."""
    html = re.sub(r"<style.*?</style>|<svg.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"[ \t\r\n]+", " ", re.sub(r"<[^>]+>", " ", html))


def test_page_shows_the_card_number_balance_and_what_each_part_means(client, tenant, db):
    customer = make_customer(db, tenant.company_id, available=123450, pending=2000, reserved=1500)
    response = page(client, customer)
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    html = response.get_data(as_text=True)
    words = text_of(html)
    assert customer.card_number in words
    assert "1,234.50 bonuses" in words  # available, after the reservation
    assert "Anna’s loyalty card" in words and "Test Shop" in words
    assert re.search(r"Available 1.234.50 Yours to spend now", words)
    assert re.search(r"Pending 20.00 Earned on recent purchases .* "
                     r"the next ones arrive on \d+ \w+ 20\d\d", words)
    assert re.search(r"Reserved 15.00 Set aside for a purchase being paid right now", words)
    # The number as bars for the register's scanner and as a QR code for a phone.
    assert f'aria-label="{customer.card_number}" class="ean13"' in html
    assert 'class="segno"' in html


def test_page_lists_only_the_companys_published_active_stores_by_city(client, tenant, other_tenant,
                                                                      db):
    make_store(db, tenant.company_id, "Tverskaya", city="Moscow", address="Tverskaya st. 7")
    make_store(db, tenant.company_id, "Arbat", city="Moscow", address="Arbat st. 12")
    make_store(db, tenant.company_id, "Nevsky", city="Saint Petersburg", address="Nevsky pr. 28")
    make_store(db, tenant.company_id, "Closed one", active=False)
    make_store(db, tenant.company_id, "Warehouse", channels="")
    make_store(db, other_tenant.company_id, "Not ours")
    customer = make_customer(db, tenant.company_id)
    words = text_of(page(client, customer).get_data(as_text=True))
    listed = re.search(r"Where to use your card (.*) Keep this link", words).group(1)
    assert listed.split() == (
        "Moscow Arbat Arbat st. 12 Tverskaya Tverskaya st. 7 "
        "Saint Petersburg Nevsky Nevsky pr. 28").split()


def test_page_with_no_published_store_says_where_to_ask(client, tenant, db):
    make_store(db, tenant.company_id, "Warehouse", channels="")
    words = text_of(page(client, make_customer(db, tenant.company_id)).get_data(as_text=True))
    assert "Ask at the register where your card is accepted." in words
    assert "Warehouse" not in words


def test_page_lists_at_most_a_hundred_stores_and_counts_the_rest(client, tenant, db):
    for i in range(PAGE_STORE_LIMIT + 3):
        make_store(db, tenant.company_id, f"Store {i:03d}")
    words = text_of(page(client, make_customer(db, tenant.company_id)).get_data(as_text=True))
    assert "Store 099" in words and "Store 100" not in words
    assert "…and 3 more stores." in words


def test_page_runs_no_script_and_loads_nothing_from_elsewhere(client, tenant, db):
    make_store(db, tenant.company_id, "Arbat")
    response = page(client, make_customer(db, tenant.company_id, available=100))
    html = response.get_data(as_text=True)
    assert "<script" not in html.lower()
    assert not re.search(r"\son\w+\s*=", html)  # no event-handler attributes either
    assert set(re.findall(r"https?://[^\s\"'<>)]+", html)) <= {SVG_NAMESPACE}
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["Cache-Control"] == "no-store"


def test_user_text_is_escaped(client, tenant, db):
    db.execute(update(Company).where(Company.id == tenant.company_id)
               .values(name='<img src=x onerror="alert(1)">'))
    db.commit()
    make_store(db, tenant.company_id, "<b>Bold</b>")
    html = page(client, make_customer(db, tenant.company_id, first_name="<i>Eve</i>")).get_data(
        as_text=True)
    assert "<img" not in html and "<b>" not in html and "<i>" not in html
    assert "&lt;b&gt;Bold&lt;/b&gt;" in html


def test_bonuses_that_have_come_due_show_as_available(client, tenant, db):
    customer = make_customer(db, tenant.company_id, available=1000, pending=500,
                             pending_at=utcnow() + timedelta(days=1))
    db.execute(update(RewardAccount).values(next_maturity_at=utcnow() - timedelta(seconds=1)))
    db.execute(update(LedgerEntry).where(LedgerEntry.status == "PENDING")
               .values(available_at=utcnow() - timedelta(seconds=1)))
    db.commit()
    words = text_of(page(client, customer).get_data(as_text=True))
    assert "Available 15.00" in words and "Pending 0.00" in words
    assert "arrive on" not in words
    db.expire_all()
    account = db.scalar(select(RewardAccount).where(RewardAccount.customer_id == customer.id))
    assert (account.available, account.pending) == (1500, 0)


def test_wallet_link_only_when_a_pass_certificate_is_configured(client, settings, tenant, db,
                                                                tmp_path):
    customer = make_customer(db, tenant.company_id)
    html = page(client, customer).get_data(as_text=True)
    assert ".pkpass" not in html
    assert "Add to Apple Wallet is not offered by this shop yet." in text_of(html)

    configured = wallet_app(settings, make_pass_certificates(tmp_path))
    try:
        html = page(configured.test_client(), customer).get_data(as_text=True)
    finally:
        configured.extensions["engine"].dispose()
    assert f'href="{customer.card_token}.pkpass"' in html
    assert "Add to Apple Wallet" in text_of(html)


UNKNOWN_TOKENS = ["A" * 43, "short", "x" * 200]


@pytest.mark.parametrize("token", UNKNOWN_TOKENS)
@pytest.mark.parametrize("suffix", ["", ".pkpass"])
def test_unknown_token_is_a_plain_404(client, tenant, db, token, suffix):
    make_customer(db, tenant.company_id)
    for accept in (None, "application/json", "*/*"):
        headers = {"Accept": accept} if accept else {}
        response = client.get(f"/cards/{token}{suffix}", headers=headers)
        assert response.status_code == 404
        assert response.get_json() == {"detail": "card not found", "code": "not_found"}


@pytest.mark.parametrize("token", UNKNOWN_TOKENS)
@pytest.mark.parametrize("suffix", ["", ".pkpass"])
def test_unknown_token_is_an_html_page_for_a_browser(client, token, suffix):
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = client.get(f"/cards/{token}{suffix}",
                          headers={"Accept": browser, "Accept-Language": "en"})
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    words = text_of(response.get_data(as_text=True))
    assert "Card not found" in words
    assert not re.search(r"expired|revoked|blocked|deleted|invalid|length", words, re.I)


def test_a_token_opens_only_its_own_card(client, tenant, other_tenant, db):
    mine = make_customer(db, tenant.company_id, available=700)
    theirs = make_customer(db, other_tenant.company_id, available=900)
    assert "7.00 bonuses" in text_of(page(client, mine).get_data(as_text=True))
    words = text_of(page(client, theirs).get_data(as_text=True))
    assert "9.00 bonuses" in words and "Other Shop" in words and mine.card_number not in words


def test_card_routes_are_in_the_interface_document(client):
    spec = client.get("/openapi.json").get_json()
    page_doc = spec["paths"]["/cards/{token}"]["get"]
    pass_doc = spec["paths"]["/cards/{token}.pkpass"]["get"]
    for doc in (page_doc, pass_doc):
        assert (doc["x-group"], doc["x-readiness"]) == ("native", "READY")
        assert "security" not in doc and "x-scope" not in doc
    assert "text/html" in page_doc["responses"]["200"]["content"]
    assert "application/vnd.apple.pkpass" in pass_doc["responses"]["200"]["content"]
    assert "503" in pass_doc["responses"]
    lookup = spec["paths"]["/v1/gift-cards/{code}"]["get"]
    assert (lookup["x-scope"], lookup["x-lifecycle"]) == ("checkout:write", "active")
    assert lookup["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/GiftCardResponse"}


def test_display_amount_groups_thousands():
    assert display_amount(0) == "0.00"
    assert display_amount(123456789) == f"1{NBSP}234{NBSP}567.89"
    assert display_amount(-100050) == f"-1{NBSP}000.50"
    assert display_amount(99999) == "999.99"


def test_customer_fixture_has_a_valid_card(db, tenant):
    customer = make_customer(db, tenant.company_id)
    stored = db.scalar(select(Customer).where(Customer.id == customer.id))
    assert is_valid_ean13(stored.card_number) and len(stored.card_token) == 43
