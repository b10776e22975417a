"""Russian and English: by the browser's Accept-Language, Russian when it names neither, and the
switch on every page, whose choice the member keeps; money and dates the language's way."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po

from testbed.cards import make_customer
from tests.portal.helpers import add_staff, post_form, sign_in

TRANSLATIONS = Path(__file__).resolve().parents[2] / "app" / "translations"


@pytest.mark.parametrize("accept, expected", [
    (None, "Войти"), ("de-DE,de;q=0.9", "Войти"), ("en-US,en;q=0.8", "Sign in"),
    ("ru-RU,ru;q=0.9,en;q=0.8", "Войти"), ("fr, en;q=0.5", "Sign in")])
def test_the_language_follows_the_browser_else_russian(client, accept, expected):
    headers = {"Accept-Language": accept} if accept else {}
    html = client.get("/portal/login", headers=headers).get_data(as_text=True)
    assert f'<button type="submit" class="primary">{expected}</button>' in html
    assert f'<html lang="{"en" if expected == "Sign in" else "ru"}">' in html


def test_money_and_dates_are_written_the_languages_way(app, tenant, db):
    customer = make_customer(db, tenant.company_id, available=123_456)
    add_staff(app, tenant.company_id, "owner@example.com", "owner")
    russian, english = app.test_client(), app.test_client()
    sign_in(russian, "owner@example.com")
    sign_in(english, "owner@example.com")
    in_russian = russian.get(f"/portal/customers/{customer.id}").get_data(as_text=True)
    in_english = english.get(f"/portal/customers/{customer.id}",
                             headers={"Accept-Language": "en"}).get_data(as_text=True)
    assert "1\xa0234,56\xa0₽" in in_russian and "Доступно" in in_russian
    assert "1,234.56\xa0₽" in in_english and "Available" in in_english
    moscow = customer.created_at.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Moscow"))
    assert moscow.strftime("%d.%m.%Y, %H:%M") in in_russian


def test_the_switch_keeps_the_members_choice_across_sign_ins(app, tenant):
    add_staff(app, tenant.company_id, "owner@example.com", "owner")
    client = app.test_client()
    sign_in(client, "owner@example.com")
    switched = post_form(client, "/portal/", "/portal/language",
                         {"language": "en", "next": "/portal/customers"})
    assert switched.status_code == 303 and switched.headers["Location"] == "/portal/customers"
    assert "Sign out" in client.get("/portal/").get_data(as_text=True)
    elsewhere = app.test_client()  # another browser, asking for Russian
    sign_in(elsewhere, "owner@example.com")
    assert "Sign out" in elsewhere.get("/portal/", headers={"Accept-Language": "ru"}).get_data(
        as_text=True)


def test_the_switch_works_before_signing_in(client):
    post_form(client, "/portal/login", "/portal/language", {"language": "en"})
    assert "Sign in" in client.get("/portal/login").get_data(as_text=True)


def test_the_compiled_catalog_is_the_translated_one():
    """The .mo served is the .po's compilation, and every message is translated."""
    folder = TRANSLATIONS / "ru" / "LC_MESSAGES"
    with open(folder / "messages.po", "rb") as po, open(folder / "messages.mo", "rb") as mo:
        source, compiled = read_po(po), read_mo(mo)
    translated = {m.id: m.string for m in source if m.id}
    assert all(translated.values()), [k for k, v in translated.items() if not v]
    assert {m.id: m.string for m in compiled if m.id} == translated
    with open(TRANSLATIONS / "messages.pot", "rb") as pot:
        assert {m.id for m in read_po(io.BytesIO(pot.read())) if m.id} == set(translated)
