"""The card page speaks Russian and English: Russian unless the browser asks for English, and
a switch whose choice a cookie on /cards keeps."""
from __future__ import annotations

import re
from datetime import timedelta

from testbed.cards import make_customer
from tests.api.test_card_page import text_of

NBSP = "\u00a0"


def _words(client, customer, query: str = "", **headers) -> str:
    answer = client.get(f"/cards/{customer.card_token}{query}", headers=headers)
    assert answer.status_code == 200
    return text_of(answer.get_data(as_text=True))


def test_russian_by_default_with_the_russian_way_of_writing_numbers(client, tenant, db):
    customer = make_customer(db, tenant.company_id, available=123_450)
    words = _words(client, customer)
    assert "Можно потратить" in words and f"1{NBSP}234,50 бонусов" in words
    assert _words(client, customer, **{"Accept-Language": "de"}).count("Можно потратить") == 1


def test_english_when_the_browser_asks(client, tenant, db):
    customer = make_customer(db, tenant.company_id, available=123_450)
    words = _words(client, customer, **{"Accept-Language": "en-GB,en;q=0.9"})
    assert "Available to spend" in words and "1,234.50 bonuses" in words


def test_the_switch_is_kept_in_a_cookie_on_cards(app, tenant, db):
    customer = make_customer(db, tenant.company_id)
    client = app.test_client()
    answer = client.get(f"/cards/{customer.card_token}?lang=en",
                        headers={"Accept-Language": "ru"})
    cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith("loyalty_lang=en") and "Path=/cards/" in cookie and "HttpOnly" in cookie
    assert "Available to spend" in _words(client, customer, **{"Accept-Language": "ru"})
    html = client.get(f"/cards/{customer.card_token}").get_data(as_text=True)
    assert 'href="?lang=ru"' in html and 'href="?lang=en"' in html


def test_the_pending_day_is_written_in_the_language(client, tenant, db):
    from app.database.engine import utcnow

    customer = make_customer(db, tenant.company_id, pending=500,
                             pending_at=utcnow() + timedelta(days=40))
    assert re.search(r"следующие — \d+ [а-я]+ 20\d\d", _words(client, customer))
    assert "arrive on" in _words(client, customer, **{"Accept-Language": "en"})
