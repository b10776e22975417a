"""Russian and English, with Flask-Babel: the member's choice (the switch on every page), else
the browser's Accept-Language, else Russian. Money, numbers and dates are written the chosen
language's way, in Moscow time."""
from __future__ import annotations

from pathlib import Path

from babel.numbers import format_decimal
from flask import Flask, request, session
from flask_babel import Babel, format_datetime, get_locale

from app.portal.security import in_portal

LANGUAGES = ("ru", "en")
DEFAULT = "ru"
TRANSLATIONS = Path(__file__).resolve().parent.parent / "translations"


def chosen_language() -> str:
    if in_portal(request.path):
        from flask_login import current_user

        choice = session.get("locale")
        if choice in LANGUAGES:
            return choice
        stored = getattr(current_user, "locale", None) if current_user.is_authenticated else None
        if stored in LANGUAGES:
            return stored
    return request.accept_languages.best_match(LANGUAGES) or DEFAULT


def money(kopecks: int | None) -> str:
    """Points as roubles: "1 234,56 ₽" in Russian, "1,234.56 ₽" in English."""
    if kopecks is None:
        return ""
    sign = "-" if kopecks < 0 else ""
    whole, cents = divmod(abs(kopecks), 100)
    # Integer arithmetic up to the last moment: no float touches a balance.
    text = format_decimal(whole, "#,##0", locale=str(get_locale()))
    separator = "," if str(get_locale()).startswith("ru") else "."
    return f"{sign}{text}{separator}{cents:02d}\N{NO-BREAK SPACE}₽"


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
