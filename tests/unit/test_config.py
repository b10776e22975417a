import pytest

from app.config import DEVELOPMENT_PEPPER, ConfigError, Settings


def test_embedded_default_runs_on_sqlite_with_a_development_pepper():
    settings = Settings.from_env({})
    assert settings.is_sqlite and settings.database_url.endswith("instance/loyalty.db")
    assert settings.api_key_pepper == DEVELOPMENT_PEPPER
    assert settings.idempotency_ttl == 86400 and settings.max_content_length == 16 * 1024 * 1024
    assert settings.redis_url is None and not settings.webhook_allow_private_addresses
    assert settings.public_base_url == "http://127.0.0.1:8000"


def test_postgresql_without_a_pepper_refuses_to_start():
    with pytest.raises(ConfigError, match="API_KEY_PEPPER"):
        Settings.from_env({"DATABASE_URL": "postgresql://db/loyalty"})


def test_postgresql_without_a_public_base_url_refuses_to_start():
    with pytest.raises(ConfigError, match="PUBLIC_BASE_URL"):
        Settings.from_env({"DATABASE_URL": "postgresql://db/loyalty", "API_KEY_PEPPER": "p"})


@pytest.mark.parametrize("url", ["cards.example.com", "ftp://cards.example.com",
                                 "https://cards.example.com/?x=1", "https://"])
def test_malformed_public_base_url_is_a_config_error(url):
    with pytest.raises(ConfigError, match="PUBLIC_BASE_URL"):
        Settings.from_env({"PUBLIC_BASE_URL": url})


def test_postgresql_url_uses_psycopg2_and_settings_are_read():
    settings = Settings.from_env({
        "DATABASE_URL": "postgres://u@db/loyalty", "API_KEY_PEPPER": "p", "IDEMPOTENCY_TTL": "60",
        "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "true", "REDIS_URL": "redis://r:6379/1",
        "PUBLIC_BASE_URL": "https://cards.example.com/",
    })
    assert settings.public_base_url == "https://cards.example.com"
    assert settings.database_url == "postgresql+psycopg2://u@db/loyalty"
    assert settings.idempotency_ttl == 60 and settings.webhook_allow_private_addresses
    assert settings.redis_url == "redis://r:6379/1"


def test_malformed_number_is_a_config_error():
    with pytest.raises(ConfigError, match="IDEMPOTENCY_TTL"):
        Settings.from_env({"IDEMPOTENCY_TTL": "a day"})


def test_retention_and_metrics_settings():
    defaults = Settings.from_env({})
    assert defaults.outbox_retention_days == 30 and defaults.metrics_token is None
    given = Settings.from_env({"OUTBOX_RETENTION_DAYS": "7", "METRICS_TOKEN": "scrape-me"})
    assert given.outbox_retention_days == 7 and given.metrics_token == "scrape-me"
    with pytest.raises(ConfigError, match="OUTBOX_RETENTION_DAYS"):
        Settings.from_env({"OUTBOX_RETENTION_DAYS": "0"})


def test_the_reports_share_settings():
    defaults = Settings.from_env({})
    assert (defaults.reports_at_once, defaults.report_timeout_seconds) == (4, 120)
    given = Settings.from_env({"REPORTS_AT_ONCE": "2", "REPORT_TIMEOUT_SECONDS": "30",
                               "WEB_THREADS": "8"})
    assert (given.reports_at_once, given.report_timeout_seconds, given.web_threads) == (2, 30, 8)
    for name in ("REPORTS_AT_ONCE", "REPORT_TIMEOUT_SECONDS", "WEB_THREADS"):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: "0"})


@pytest.mark.parametrize("given, networks", [
    ("", ["127.0.0.1/32", "::1/128"]),  # gunicorn's default: a proxy on this host
    ("10.0.0.0/8, 192.0.2.7", ["10.0.0.0/8", "192.0.2.7/32"]),
    ("*", None),
])
def test_trusted_proxies_are_read_as_networks(given, networks):
    from app.config import trusted_networks

    setting = Settings.from_env({"FORWARDED_ALLOW_IPS": given}).forwarded_allow_ips
    found = trusted_networks(setting)
    assert (None if found is None else [str(network) for network in found]) == networks


@pytest.mark.parametrize("given", ["proxy.internal", "10.0.0.0/33", "127.0.0.1,, nginx"])
def test_a_trusted_proxy_that_is_no_address_is_a_config_error(given):
    with pytest.raises(ConfigError, match="FORWARDED_ALLOW_IPS"):
        Settings.from_env({"FORWARDED_ALLOW_IPS": given})


def test_the_settings_import_nothing_of_the_http_edge():
    # The settings are read by the worker, the CLI and gunicorn's config alike; the edge
    # (app/web/) reads them, not the other way round.
    from tests.unit.test_import_graph import import_graph

    assert not {m for m in import_graph()["app.config"] if m.startswith("app.web")}


def test_the_reports_count_the_threads_gunicorn_serves_with(monkeypatch, tmp_path):
    """Without WEB_THREADS the reports' share keeps one of the threads gunicorn really runs free
    (app/serving.py): the two read one default."""
    import importlib

    import app.serving

    monkeypatch.delenv("WEB_THREADS", raising=False)
    # Given, so that reading the settings again makes no directory of its own.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    serving = importlib.reload(app.serving)
    assert Settings.from_env({}).web_threads == serving.threads > 1
