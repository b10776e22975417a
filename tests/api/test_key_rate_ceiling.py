"""A key's ceiling over all its registers (API_KEY_RATE_LIMIT): each register has its own
count, but a key naming many registers, or disabling a terminal and making a new one, gets no
more than its ceiling."""
from __future__ import annotations

from dataclasses import replace

import pytest

from app import create_app
from app.config import ConfigError, Settings
from tests.api.locations_helpers import create_store, create_terminal

CEILING = "4/minute"


@pytest.fixture
def ceiled(settings):
    """A per-register rate no test comes near, and a key's ceiling of four a minute."""
    return create_app(replace(settings, api_rate_limit="1000/minute", api_key_rate_limit=CEILING))


def at(app, tenant, pos_key: str | None = None):
    headers = tenant.headers(X_Loyalty_Pos_Key=pos_key) if pos_key else tenant.headers()
    return app.test_client().get("/v1/company", headers=headers)


def test_three_registers_share_their_keys_ceiling(app, ceiled, tenant):
    client = app.test_client()  # the arranging app has the default rates
    store = create_store(client, tenant)
    tills = [create_terminal(client, tenant, store["id"], posKey=f"till-{n}")["posKey"]
             for n in range(3)]
    answers = [at(ceiled, tenant, till) for till in tills + tills[:2]]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 429]
    refused = answers[-1]
    assert refused.get_json()["code"] == "rate_limited"
    assert "over all its registers" in refused.get_json()["detail"]
    assert "4 per 1 minute" in refused.get_json()["detail"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    policies = answers[0].headers["RateLimit-Policy"].split(", ")
    assert policies == ['"per-register";q=1000;w=60', '"key-ceiling";q=4;w=60']
    remaining = [a.headers["RateLimit"].split(", ")[1].split(";")[1] for a in answers[:4]]
    assert remaining == ["r=3", "r=2", "r=1", "r=0"]
    # The key's back-office requests are under the same ceiling.
    assert at(ceiled, tenant).status_code == 429


def test_a_new_terminal_in_place_of_a_disabled_one_buys_no_more(app, ceiled, tenant):
    client = app.test_client()
    store = create_store(client, tenant)
    first = create_terminal(client, tenant, store["id"], posKey="till-1")
    assert [at(ceiled, tenant, first["posKey"]).status_code for _ in range(4)] == [200] * 4
    disabled = client.patch(f"/v1/terminals/{first['id']}", json={"state": "DISABLED"},
                            headers=tenant.headers())
    assert disabled.status_code == 200, disabled.get_json()
    second = create_terminal(client, tenant, store["id"], posKey="till-2")
    assert at(ceiled, tenant, second["posKey"]).status_code == 429


def test_each_key_has_its_own_ceiling(ceiled, tenant):
    assert [at(ceiled, tenant).status_code for _ in range(5)] == [200] * 4 + [429]
    other_key = tenant.key_with("company:read")
    answer = ceiled.test_client().get("/v1/company", headers=tenant.headers(other_key))
    assert answer.status_code == 200


def test_off_leaves_only_the_per_register_rate(settings, tenant):
    app = create_app(replace(settings, api_rate_limit="1000/minute", api_key_rate_limit=None))
    answers = [at(app, tenant) for _ in range(6)]
    assert {a.status_code for a in answers} == {200}
    assert answers[-1].headers["RateLimit-Policy"] == '"per-key";q=1000;w=60'


@pytest.mark.redis
def test_processes_share_the_ceiling_through_redis(app, settings, tenant):
    assert settings.redis_url
    client = app.test_client()
    store = create_store(client, tenant)
    till = create_terminal(client, tenant, store["id"], posKey="till-1")["posKey"]
    first, second = (create_app(replace(settings, api_rate_limit="1000/minute",
                                        api_key_rate_limit=CEILING)) for _ in range(2))
    assert [at(process, tenant, till).status_code
            for process in (first, second, first, second)] == [200] * 4
    assert at(first, tenant).status_code == 429


@pytest.mark.parametrize("value, expected", [
    (None, "36000/minute"), ("", "36000/minute"), ("600/second", "600/second"), ("off", None)])
def test_the_setting(value, expected):
    env = {} if value is None else {"API_KEY_RATE_LIMIT": value}
    assert Settings.from_env(env).api_key_rate_limit == expected


@pytest.mark.parametrize("value", ["lots", "600", "600/fortnight"])
def test_a_malformed_setting_refuses_to_start(value):
    with pytest.raises(ConfigError, match="API_KEY_RATE_LIMIT"):
        Settings.from_env({"API_KEY_RATE_LIMIT": value})
