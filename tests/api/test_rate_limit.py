"""The rate limit: 429 `rate_limited` with Retry-After and the RateLimit fields, counted per
register when a request names one (X-Loyalty-Pos-Key) and per credential otherwise, shared
through Redis, and never failing a request because its store is away. (The key's ceiling over
all its registers: test_key_rate_ceiling.py.)"""
from __future__ import annotations

import logging
import time
from dataclasses import replace

import pytest
from sqlalchemy import select

from app import create_app
from app.config import ConfigError, Settings
from app.models import ApiCredential
from testbed.backing_services import ThrowawayRedis
from testbed.ports import free_port
from tests.api.locations_helpers import create_store, create_terminal

LIMIT = "3/minute"
CEILING = '"key-ceiling";q=36000;w=60'


@pytest.fixture
def limited(settings):
    return create_app(replace(settings, api_rate_limit=LIMIT))


def first_item(header: str) -> str:
    """The first rate's item of a RateLimit or RateLimit-Policy field (the key's ceiling is
    listed after it)."""
    return header.split(", ")[0]


def get_company(app, tenant, key=None):
    return app.test_client().get("/v1/company", headers=tenant.headers(key))


def test_a_key_over_its_rate_gets_a_429_with_the_error_body_and_retry_after(limited, tenant):
    answers = [get_company(limited, tenant) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert refused.get_json() == {"detail": refused.get_json()["detail"], "code": "rate_limited"}
    assert "3 per 1 minute" in refused.get_json()["detail"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.headers["X-Request-Id"]


def test_every_answer_to_a_key_advertises_the_policy_and_what_is_left(limited, tenant):
    remaining = []
    for _ in range(3):
        answer = get_company(limited, tenant)
        assert answer.headers["RateLimit-Policy"] == f'"per-key";q=3;w=60, {CEILING}'
        name, r, t = first_item(answer.headers["RateLimit"]).split(";")
        assert name == '"per-key"' and 1 <= int(t.removeprefix("t=")) <= 60
        remaining.append(int(r.removeprefix("r=")))
    assert remaining == [2, 1, 0]
    assert "RateLimit" not in limited.test_client().get("/health").headers


def test_each_key_has_its_own_count(limited, tenant):
    other_key = tenant.key_with("company:read")
    for _ in range(3):
        get_company(limited, tenant)
    assert get_company(limited, tenant).status_code == 429
    assert get_company(limited, tenant, other_key).status_code == 200


def registers(app, tenant, count: int) -> list[str]:
    """posKeys of `count` active terminals, made with a client not rate-limited."""
    client = app.test_client()
    store = create_store(client, tenant)
    return [create_terminal(client, tenant, store["id"], posKey=f"till-{n}")["posKey"]
            for n in range(count)]


def test_each_register_of_a_key_has_its_own_count_and_the_key_without_one_its_own(
        app, limited, tenant):
    first, second = registers(app, tenant, 2)
    at = lambda pos_key: limited.test_client().get(  # noqa: E731
        "/v1/company", headers=tenant.headers(X_Loyalty_Pos_Key=pos_key))
    answers = [at(first) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[0].headers["RateLimit-Policy"] == f'"per-register";q=3;w=60, {CEILING}'
    assert "register" in answers[-1].get_json()["detail"]
    # The shop's other register, and the key's back-office requests, go on.
    assert [at(second).status_code for _ in range(3)] == [200, 200, 200]
    assert [get_company(limited, tenant).status_code for _ in range(3)] == [200, 200, 200]
    assert first_item(get_company(limited, tenant).headers["RateLimit-Policy"]) == (
        '"per-key";q=3;w=60')


def test_a_pos_key_that_names_no_active_terminal_is_refused_before_it_is_counted(limited, tenant):
    for _ in range(4):
        refused = limited.test_client().get(
            "/v1/company", headers=tenant.headers(X_Loyalty_Pos_Key="no-such-till"))
        assert refused.status_code == 403
        assert refused.get_json()["code"] == "terminal_inactive"
    assert get_company(limited, tenant).status_code == 200


def test_refused_keys_are_not_counted_and_checks_keep_their_order(limited, tenant):
    client = limited.test_client()
    for _ in range(4):
        refused = client.get("/v1/company", headers={"Authorization": "Bearer nope"})
        assert refused.status_code == 401
    narrow = tenant.key_with("program:read")
    for _ in range(4):
        assert get_company(limited, tenant, narrow).status_code == 403
    assert get_company(limited, tenant).status_code == 200
    for _ in range(2):
        client.post("/v1/stores", json={}, headers=tenant.headers())
    # Over the rate, a bad body is refused for the rate first.
    assert client.post("/v1/stores", json={}, headers=tenant.headers()).status_code == 429


def test_a_busy_key_is_counted_a_lease_at_a_time(settings, tenant, db):
    """With a large limit a process takes 20 requests from the shared count at once, serves
    them from memory, and still tells the client what is left for it."""
    apps = [create_app(replace(settings, api_rate_limit="2000/minute")) for _ in range(2)]
    seen = [first_item(get_company(apps[0], tenant).headers["RateLimit"]) for _ in range(5)]
    assert [header.split(";")[1] for header in seen] == [f"r={n}" for n in range(1999, 1994, -1)]
    # The second process's lease comes from the count Redis shares, or from its own memory.
    shared = settings.redis_url is not None
    assert first_item(get_company(apps[1], tenant).headers["RateLimit"]).split(";")[1] == (
        "r=1979" if shared else "r=1999")

    credential_id = db.scalar(select(ApiCredential.id)
                              .where(ApiCredential.company_id == tenant.company_id))
    per_key = apps[0].extensions["rate_limit"].per_key
    counts = per_key.counts
    counter = counts.shared if shared else counts.memory
    stats = counter.get_window_stats(per_key.limit, "per-key", credential_id)
    # Five requests took one lease of 20 (two processes, two leases, when Redis shares them).
    assert stats.remaining == (1960 if shared else 1980)
    assert per_key.lease_size == 20


def test_off_counts_nothing(settings, tenant):
    app = create_app(replace(settings, api_rate_limit=None, api_key_rate_limit=None))
    answers = [get_company(app, tenant) for _ in range(5)]
    assert {a.status_code for a in answers} == {200}
    assert "RateLimit" not in answers[-1].headers


@pytest.mark.parametrize("value, expected", [
    (None, "60000/minute"), ("", "60000/minute"), ("600/minute", "600/minute"),
    ("100/second", "100/second"), ("off", None), ("OFF", None)])
def test_the_setting(value, expected):
    env = {} if value is None else {"API_RATE_LIMIT": value}
    assert Settings.from_env(env).api_rate_limit == expected


@pytest.mark.parametrize("value", ["lots", "600", "600/fortnight"])
def test_a_malformed_setting_refuses_to_start(value):
    with pytest.raises(ConfigError, match="API_RATE_LIMIT"):
        Settings.from_env({"API_RATE_LIMIT": value})


def test_an_unreachable_redis_fails_open_and_counts_in_memory(settings, tenant, caplog):
    app = create_app(replace(settings, api_rate_limit=LIMIT,
                             redis_url=f"redis://127.0.0.1:{free_port()}/0"))
    with caplog.at_level(logging.WARNING):
        answers = [get_company(app, tenant) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert any("falling back to in-memory" in r.getMessage() for r in caplog.records)


@pytest.mark.redis
def test_processes_share_the_count_through_redis(settings, tenant):
    assert settings.redis_url
    first, second = (create_app(replace(settings, api_rate_limit=LIMIT)) for _ in range(2))
    assert [get_company(app, tenant).status_code for app in (first, second, first)] == [200] * 3
    assert get_company(second, tenant).status_code == 429


@pytest.mark.redis
def test_a_redis_stopped_under_load_fails_no_request(settings, tenant, caplog, tmp_path):
    server = ThrowawayRedis(tmp_path)
    server.start()
    app = create_app(replace(settings, api_rate_limit="100/minute", redis_url=server.url))
    try:
        assert get_company(app, tenant).headers["RateLimit"].startswith('"per-key";r=99;')
    finally:
        server.kill()
    with caplog.at_level(logging.WARNING):
        answers = [get_company(app, tenant) for _ in range(3)]
    assert {a.status_code for a in answers} == {200}
    assert any("falling back to in-memory" in r.getMessage() for r in caplog.records)


def test_another_429_keeps_its_own_retry_after(settings, tenant):
    """An OTP cooldown is a 429 of its own: its wait is the cooldown's, not the key's window."""
    app = create_app(replace(settings, api_rate_limit="1000/hour"))
    client = app.test_client()
    body = {"phone": "+79161234567", "purpose": "ENROLLMENT"}
    assert client.post("/v1/otp-challenges", json=body, headers=tenant.headers()).status_code == 201
    again = client.post("/v1/otp-challenges", json=body, headers=tenant.headers())
    assert again.status_code == 429
    assert 1 <= int(again.headers["Retry-After"]) <= 60  # the window would say about 3600
    assert again.headers["RateLimit"].startswith('"per-key";r=998;')


def test_a_process_forgets_leases_whose_window_ended(settings, monkeypatch):
    from app.web import rate_counts as rate_limit

    monkeypatch.setattr(rate_limit, "KEPT_LEASES", 2)
    app = create_app(replace(settings, api_rate_limit="6000/minute"))
    per_key = app.extensions["rate_limit"].per_key
    per_key.keep("gone", rate_limit.Lease(per_key.lease_size - 1, 10, reset_at=0))
    per_key.keep("kept", rate_limit.Lease(per_key.lease_size - 1, 10, time.time() + 60))
    per_key.keep("new", rate_limit.Lease(per_key.lease_size - 1, 10, time.time() + 60))
    assert set(per_key.leases) == {"kept", "new"}
    assert per_key.serve_from_lease("gone") is None
    assert per_key.serve_from_lease("kept").left == per_key.lease_size - 2
