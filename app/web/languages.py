"""Russian and English for the back office and the card page, with Flask-Babel: the choice
made with the page's switch (a back-office member's is kept on them; a shopper's in a cookie
on /cards), else the browser's Accept-Language, else Russian. Money, numbers and dates are
written the chosen language's way, in Moscow time."""
from __future__ import annotations

from pathlib import Path

from babel.numbers import format_decimal
from flask import Flask, request, session
from flask_babel import Babel, format_date, format_datetime, get_locale

from app.web.portal_paths import in_portal

LANGUAGES = ("ru", "en")
DEFAULT = "ru"
CARD_COOKIE = "loyalty_lang"
CARD_PATH = "/cards/"
TRANSLATIONS = Path(__file__).resolve().parent.parent / "translations"


def chosen_language() -> str:
    if request.path.startswith(CARD_PATH):
        choice = request.args.get("lang") or request.cookies.get(CARD_COOKIE)
        if choice in LANGUAGES:
            return choice
    elif in_portal(request.path):
        from flask_login import current_user

        choice = session.get("locale")
        if choice in LANGUAGES:
            return choice
        stored = getattr(current_user, "locale", None) if current_user.is_authenticated else None
        if stored in LANGUAGES:
            return stored
    return request.accept_languages.best_match(LANGUAGES) or DEFAULT


def amount(kopecks: int | None) -> str:
    """Points as a number: "1 234,56" in Russian, "1,234.56" in English."""
    if kopecks is None:
        return ""
    sign = "-" if kopecks < 0 else ""
    whole, cents = divmod(abs(kopecks), 100)
    # Integer arithmetic up to the last moment: no float touches a balance.
    text = format_decimal(whole, "#,##0", locale=str(get_locale()))
    separator = "," if str(get_locale()).startswith("ru") else "."
    return f"{sign}{text}{separator}{cents:02d}"


def money(kopecks: int | None) -> str:
    """Points as roubles: "1 234,56 ₽" in Russian, "1,234.56 ₽" in English."""
    return "" if kopecks is None else f"{amount(kopecks)}\N{NO-BREAK SPACE}₽"


def day(value) -> str:
    return "" if value is None else format_date(value, "d MMMM y")


def remember_card_language(response) -> None:
    """A language chosen on the card page (`?lang=`) is kept for the card's next visits."""
    choice = request.args.get("lang")
    if choice in LANGUAGES:
        response.set_cookie(CARD_COOKIE, choice, max_age=365 * 24 * 3600, path=CARD_PATH,
                            httponly=True, samesite="Lax", secure=request.is_secure)


def moment(value) -> str:
    return "" if value is None else format_datetime(value, "short")


def register_languages(app: Flask) -> None:
    app.config.update(BABEL_DEFAULT_LOCALE=DEFAULT, BABEL_DEFAULT_TIMEZONE="Europe/Moscow",
                      BABEL_TRANSLATION_DIRECTORIES=str(TRANSLATIONS))
    Babel(app, locale_selector=chosen_language)
    app.jinja_env.filters["money"] = money
    app.jinja_env.filters["moment"] = moment
    app.jinja_env.globals["current_language"] = lambda: str(get_locale())
    app.jinja_env.globals["LANGUAGES"] = LANGUAGES
