"""The Loyalty API: `create_app()` is settings → extensions → blueprints → errors → CLI."""
from __future__ import annotations

from functools import lru_cache
from inspect import iscoroutinefunction

from flask import Flask, Request, Response
from flask.sessions import NullSession, SessionInterface

from app.config import INSTANCE_DIR, Settings

API_BLUEPRINTS = (
    "app.api.system", "app.api.company", "app.api.credentials", "app.api.webhooks",
    "app.api.gift_cards", "app.api.cards", "app.api.passkit",
    "app.api.customers", "app.api.otp", "app.api.rewards",
    "app.api.stores", "app.api.terminals", "app.api.cashiers", "app.api.catalog",
    "app.api.checkout", "app.api.offline_sales", "app.api.sales", "app.api.campaigns",
    "app.api.reports", "app.api.audit",
)


class NoSessions(SessionInterface):
    """The API keeps no cookie session: each request gets the one null session made here,
    where Flask's own interface looks for a signing key and makes a new one every request.
    A null session refuses every write, so one can serve them all."""

    _null = NullSession()

    def open_session(self, app: Flask, request: Request) -> NullSession:
        return self._null

    def save_session(self, app: Flask, session, response: Response) -> None:
        pass


class LoyaltyApp(Flask):
    """Flask as the API runs it, without two things it did every request for nothing: making
    a cookie session, and asking whether each hook, view and error handler it calls (seven a
    register's request) is a coroutine function. None of ours is; one that were would still
    run as Flask runs it. The answers are kept per function (a view's method by its function),
    at most 1,024 of them: every function asked is a module's own here, and a closure handed to
    `after_this_request` would be kept until pushed out."""

    session_interface = NoSessions()

    def ensure_sync(self, func):
        target = getattr(func, "__func__", func)
        try:
            coroutine = _is_coroutine_function(target)
        except TypeError:  # a callable that cannot be a key: asked each time, as Flask does
            coroutine = iscoroutinefunction(target)
        return self.async_to_sync(func) if coroutine else func


_is_coroutine_function = lru_cache(maxsize=1024)(iscoroutinefunction)


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = LoyaltyApp(__name__, instance_path=str(INSTANCE_DIR))
    # Werkzeug answers `/cards//<token>` with a redirect to the merged path, built on the
    # request's Host header. No response is built from Host (docs/api.md#cards): a 404.
    app.url_map.merge_slashes = False
    configure(app, settings)
    register_database(app, settings)
    register_api(app)
    register_languages(app)
    register_portal(app, settings)
    register_rate_limit(app, settings)
    register_delivery(app, settings)
    register_metrics(app)
    register_cli(app)
    return app


def configure(app: Flask, settings: Settings) -> None:
    from app.web.logs import configure_logging

    configure_logging(settings.log_level)
    app.config.update(
        SETTINGS=settings,
        MAX_CONTENT_LENGTH=settings.max_content_length,
        API_TITLE="Loyalty API",
        API_VERSION="0.1.0",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="/docs",
        OPENAPI_SWAGGER_UI_URL="/docs/assets/",  # app.api.docs_assets
        JSON_SORT_KEYS=False,
    )
    app.json.sort_keys = False
    app.json.ensure_ascii = False


def register_database(app: Flask, settings: Settings) -> None:
    from app.database.engine import make_engine
    from app.services.transactions import RequestSession, make_session_factory

    if settings.is_sqlite:
        INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.database_url)
    app.extensions["engine"] = engine
    factory = app.extensions["session_factory"] = make_session_factory(engine)
    app.extensions["request_session"] = lambda: RequestSession(factory)


def register_api(app: Flask) -> None:
    from importlib import import_module

    from app.api.base import Api
    from app.api.descriptions import register_descriptions
    from app.api.document import OperationsPlugin, document_operations
    from app.api.enums import register_named_enums
    from app.web.errors import register_error_handlers
    from app.web.requests import register_request_hooks

    api = Api(app, spec_kwargs={"info": {"description": "Loyalty programme public API"},
                                "extra_plugins": [OperationsPlugin(app)]})
    register_named_enums(api)  # before the blueprints: their schemas are converted then
    register_descriptions(api)
    for module in API_BLUEPRINTS:
        api.register_blueprint(import_module(module).blp)
    app.register_blueprint(import_module("app.api.docs_assets").blp)  # not an operation
    document_operations(api, app)
    register_error_handlers(app)
    register_request_hooks(app)
    app.extensions["api"] = api


def register_languages(app: Flask) -> None:
    """Russian and English for the pages people read: the card page and the back office."""
    from app.web.languages import register_languages as register

    register(app)


def register_portal(app: Flask, settings: Settings) -> None:
    from app.portal import register_portal as register

    register(app, settings)


def register_rate_limit(app: Flask, settings: Settings) -> None:
    from app.web.rate_limit import register_rate_limit as register

    register(app, settings)


def register_delivery(app: Flask, settings: Settings) -> None:
    """Committed events go to the RQ queue when Redis is configured; otherwise they wait in
    the outbox until a worker's sweep finds them."""
    if not settings.redis_url:
        return
    from app.operations.delivery_queue import EventEnqueuer

    app.extensions["enqueue_events"] = EventEnqueuer(settings)


def register_metrics(app: Flask) -> None:
    from app.web.metrics import add_metrics_route

    add_metrics_route(app)


def register_cli(app: Flask) -> None:
    from app.cli import register_commands

    register_commands(app)
