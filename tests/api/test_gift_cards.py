"""Gift cards: the operator issues them, the register looks them up by code (docs/api.md#cards)."""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import threading
from datetime import timedelta
from urllib.parse import quote

import pytest
from sqlalchemy import select, update

from app import create_app
from app.database.engine import utcnow
from app.models.gift_card import GiftCard, GiftCardLookupMisses
from app.services.cards import gift_cards, identifiers
from tests.conftest import TEST_PEPPER

UNKNOWN_CODE = "2345678923456789"


def issue(db, company_id, *, amount=123456, count=1, expires_at=None):
    codes = gift_cards.issue_gift_cards(db, company_id, amount=amount, count=count,
                                        expires_at=expires_at, pepper=TEST_PEPPER, now=utcnow())
    db.commit()
    return codes


def look_up(client, tenant, code, key=None):
    return client.get(f"/v1/gift-cards/{quote(code)}", headers=tenant.headers(key))


def set_card(db, company_id, code, **values):
    digest = gift_cards.code_digest(TEST_PEPPER, code)
    db.execute(update(GiftCard).where(GiftCard.company_id == company_id,
                                      GiftCard.code_digest == digest).values(**values))
    db.commit()


# --- the operator's command -------------------------------------------------------------

def test_issue_prints_the_codes_as_its_last_lines_and_stores_only_digests(app, tenant, db):
    result = app.test_cli_runner().invoke(args=[
        "gift-cards", "issue", tenant.company_id, "--amount", "1234.56", "--count", "3"])
    assert result.exit_code == 0, result.output
    codes = result.output.strip().splitlines()[-3:]
    assert len(set(codes)) == 3
    for code in codes:
        assert identifiers.normalise_gift_code(code) == code  # 16 characters of the alphabet

    rows = db.scalars(select(GiftCard).where(GiftCard.company_id == tenant.company_id)).all()
    assert len(rows) == 3
    expected = {hmac.new(TEST_PEPPER.encode(), code.encode(), hashlib.sha256).hexdigest(): code
                for code in codes}
    assert {row.code_digest for row in rows} == set(expected)
    for row in rows:
        assert row.last4 == expected[row.code_digest][-4:]
        assert (row.initial_amount, row.balance, row.state, row.expires_at) == (
            123456, 123456, "ACTIVE", None)
        stored = " ".join(str(getattr(row, column.key)) for column in GiftCard.__table__.columns)
        assert not any(code in stored for code in codes)


def test_issued_codes_are_found_by_the_register(app, client, tenant):
    result = app.test_cli_runner().invoke(args=[
        "gift-cards", "issue", tenant.company_id, "--amount", "500",
        "--expires-at", "2099-01-31T00:00:00Z"])
    assert result.exit_code == 0, result.output
    code = result.output.strip().splitlines()[-1]
    body = look_up(client, tenant, code).get_json()
    assert body == {"code": "************" + code[-4:], "state": "ACTIVE", "balance": "500.00",
                    "initialAmount": "500.00", "currency": "RUB",
                    "expiresAt": "2099-01-31T00:00:00.000Z"}


@pytest.mark.parametrize("arguments", [
    ["--amount", "0"], ["--amount", "-5"], ["--amount", "1.234"], ["--amount", "ten"],
    ["--amount", "10", "--expires-at", "2001-01-01T00:00:00Z"],
    ["--amount", "10", "--expires-at", "soon"],
    ["--amount", "10", "--count", "0"],
])
def test_issue_refuses_bad_options_and_issues_nothing(app, tenant, db, arguments):
    result = app.test_cli_runner().invoke(
        args=["gift-cards", "issue", tenant.company_id, *arguments])
    assert result.exit_code != 0
    assert db.scalars(select(GiftCard)).all() == []


def test_issue_refuses_an_unknown_company(app, db):
    result = app.test_cli_runner().invoke(args=[
        "gift-cards", "issue", "00000000-0000-0000-0000-000000000000", "--amount", "10"])
    assert result.exit_code != 0
    assert "no company" in result.output
    assert db.scalars(select(GiftCard)).all() == []


# --- lookup -------------------------------------------------------------------------------

def test_lookup_shows_the_masked_code_state_and_balances(client, tenant, db):
    [code] = issue(db, tenant.company_id, amount=100000)
    set_card(db, tenant.company_id, code, balance=50)
    response = look_up(client, tenant, code)
    assert response.status_code == 200
    assert response.get_json() == {
        "code": "************" + code[-4:], "state": "ACTIVE", "balance": "0.50",
        "initialAmount": "1000.00", "currency": "RUB", "expiresAt": None}
    assert code not in response.get_data(as_text=True)


def test_code_is_normalised_for_case_spaces_and_dashes(client, tenant, db):
    [code] = issue(db, tenant.company_id)
    typed = [code.lower(), "-".join(code[i:i + 4] for i in range(0, 16, 4)),
             " ".join(code[i:i + 4] for i in range(0, 16, 4)).lower(), f" {code} "]
    for text in typed:
        response = look_up(client, tenant, text)
        assert response.status_code == 200, text
        assert response.get_json()["code"].endswith(code[-4:])


@pytest.mark.parametrize("stored", ["REDEEMED", "BLOCKED"])
def test_stored_states_are_shown(client, tenant, db, stored):
    [code] = issue(db, tenant.company_id)
    set_card(db, tenant.company_id, code, state=stored, balance=0)
    body = look_up(client, tenant, code).get_json()
    assert (body["state"], body["balance"]) == (stored, "0.00")


def test_an_active_card_reads_expired_once_past_its_expiry(client, tenant, db):
    [code] = issue(db, tenant.company_id, expires_at=utcnow() + timedelta(days=30))
    assert look_up(client, tenant, code).get_json()["state"] == "ACTIVE"

    past = utcnow() - timedelta(seconds=1)
    set_card(db, tenant.company_id, code, expires_at=past)
    body = look_up(client, tenant, code).get_json()
    assert body["state"] == "EXPIRED"
    assert body["expiresAt"].endswith("Z")
    stored = db.scalar(select(GiftCard.state).where(GiftCard.company_id == tenant.company_id))
    assert stored == "ACTIVE"  # a reading, not a write


def test_state_at_expiry_boundary():
    now = utcnow()
    card = GiftCard(state="ACTIVE", expires_at=now)
    assert gift_cards.state_at(card, now) == "EXPIRED"
    assert gift_cards.state_at(card, now - timedelta(microseconds=1)) == "ACTIVE"
    assert gift_cards.state_at(GiftCard(state="BLOCKED", expires_at=now), now) == "BLOCKED"
    assert gift_cards.state_at(GiftCard(state="ACTIVE", expires_at=None), now) == "ACTIVE"


@pytest.mark.parametrize("text", [UNKNOWN_CODE, "short", "0000000000000000", "ABCDEFGHJKMNPQRSU"])
def test_unknown_or_malformed_code_is_404(client, tenant, db, text):
    issue(db, tenant.company_id)
    response = look_up(client, tenant, text)
    assert response.status_code == 404
    assert response.get_json() == {"detail": "gift card not found", "code": "not_found"}


def test_another_companys_code_is_404(client, tenant, other_tenant, db):
    [theirs] = issue(db, other_tenant.company_id)
    [ours] = issue(db, tenant.company_id)
    assert look_up(client, tenant, theirs).status_code == 404
    assert look_up(client, other_tenant, theirs).status_code == 200
    assert look_up(client, other_tenant, ours).status_code == 404


def test_lookup_needs_checkout_write(client, tenant, db):
    [code] = issue(db, tenant.company_id)
    assert client.get(f"/v1/gift-cards/{code}").status_code == 401
    response = look_up(client, tenant, code, key=tenant.key_with("customers:read"))
    assert response.status_code == 403
    assert response.get_json()["code"] == "insufficient_scope"
    assert look_up(client, tenant, code, key=tenant.key_with("checkout:write")).status_code == 200


# --- the miss limit -------------------------------------------------------------------------

def assert_rate_limited(response):
    assert response.status_code == 429, response.get_json()
    assert response.get_json() == {
        "detail": "too many unknown gift-card codes; try again later", "code": "rate_limited"}
    assert 1 <= int(response.headers["Retry-After"]) <= gift_cards.MISS_WINDOW_SECONDS


def test_the_eleventh_miss_in_a_minute_is_429_and_then_even_good_codes_are_refused(
        client, tenant, db):
    [code] = issue(db, tenant.company_id)
    key = tenant.key_with("checkout:write")
    for _ in range(gift_cards.MISS_LIMIT):
        assert look_up(client, tenant, UNKNOWN_CODE, key=key).status_code == 404
    assert_rate_limited(look_up(client, tenant, UNKNOWN_CODE, key=key))
    # A refused key cannot tell a good guess from a bad one.
    assert_rate_limited(look_up(client, tenant, code, key=key))
    # Another key of the same company is not affected.
    assert look_up(client, tenant, code).status_code == 200


def test_hits_do_not_count_as_misses(client, tenant, db):
    [code] = issue(db, tenant.company_id)
    for _ in range(gift_cards.MISS_LIMIT + 5):
        assert look_up(client, tenant, code).status_code == 200
    for _ in range(gift_cards.MISS_LIMIT):
        assert look_up(client, tenant, UNKNOWN_CODE).status_code == 404


def test_malformed_codes_and_other_companies_codes_count_as_misses(client, tenant, other_tenant,
                                                                   db):
    [theirs] = issue(db, other_tenant.company_id)
    for i in range(gift_cards.MISS_LIMIT):
        assert look_up(client, tenant, theirs if i % 2 else "nonsense").status_code == 404
    assert_rate_limited(look_up(client, tenant, theirs))


def test_the_miss_count_is_shared_by_every_worker_process(app, settings, tenant, db):
    """Two app instances stand for two gunicorn workers: the count is not in the process."""
    second = create_app(settings)
    try:
        clients = [app.test_client(), second.test_client()]
        for i in range(gift_cards.MISS_LIMIT):
            assert look_up(clients[i % 2], tenant, UNKNOWN_CODE).status_code == 404
        assert_rate_limited(look_up(clients[0], tenant, UNKNOWN_CODE))
        assert_rate_limited(look_up(clients[1], tenant, UNKNOWN_CODE))
    finally:
        second.extensions["engine"].dispose()


def test_the_database_counter_is_committed_with_the_404(settings, tenant, db):
    """Without Redis the count lives in the database and survives the refused request."""
    embedded = create_app(dataclasses.replace(settings, redis_url=None))
    try:
        client = embedded.test_client()
        for _ in range(3):
            assert look_up(client, tenant, UNKNOWN_CODE).status_code == 404
        row = db.scalar(select(GiftCardLookupMisses).where(
            GiftCardLookupMisses.company_id == tenant.company_id))
        assert row.misses == 3
        for _ in range(gift_cards.MISS_LIMIT - 3):
            assert look_up(client, tenant, UNKNOWN_CODE).status_code == 404
        assert_rate_limited(look_up(client, tenant, UNKNOWN_CODE))

        # A minute after the window's first miss the key may look up again.
        db.execute(update(GiftCardLookupMisses).values(
            window_started=GiftCardLookupMisses.window_started - gift_cards.MISS_WINDOW_SECONDS))
        db.commit()
        assert look_up(client, tenant, UNKNOWN_CODE).status_code == 404
        db.expire_all()
        assert db.scalar(select(GiftCardLookupMisses.misses)) == 1
    finally:
        embedded.extensions["engine"].dispose()


def test_when_redis_is_away_the_database_counts(settings, tenant, db):
    unreachable = create_app(dataclasses.replace(settings, redis_url="redis://127.0.0.1:1/0"))
    try:
        client = unreachable.test_client()
        [code] = issue(db, tenant.company_id)
        assert look_up(client, tenant, code).status_code == 200
        for _ in range(gift_cards.MISS_LIMIT):
            assert look_up(client, tenant, UNKNOWN_CODE).status_code == 404
        assert_rate_limited(look_up(client, tenant, UNKNOWN_CODE))
    finally:
        unreachable.extensions["engine"].dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("redis", [True, False], ids=["redis-counter", "database-counter"])
def test_concurrent_misses_never_pass_the_limit(settings, tenant, redis):
    if redis and not settings.redis_url:
        pytest.skip("needs Redis")
    racing = create_app(settings if redis else dataclasses.replace(settings, redis_url=None))
    key = tenant.key_with("checkout:write")
    statuses, barrier = [], threading.Barrier(12)

    def guess():
        client = racing.test_client()
        barrier.wait()
        for _ in range(2):
            statuses.append(look_up(client, tenant, UNKNOWN_CODE, key=key).status_code)

    try:
        threads = [threading.Thread(target=guess) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        racing.extensions["engine"].dispose()
    assert sorted(statuses) == [404] * gift_cards.MISS_LIMIT + [429] * (24 - gift_cards.MISS_LIMIT)


def test_issue_takes_an_amount_up_to_the_balance_bound(app, tenant, db):
    runner = app.test_cli_runner()
    beyond = runner.invoke(args=["gift-cards", "issue", tenant.company_id,
                                 "--amount", "10000000000000.01"])
    assert beyond.exit_code == 2 and db.scalars(select(GiftCard)).all() == []
    at = runner.invoke(args=["gift-cards", "issue", tenant.company_id,
                             "--amount", "10000000000000.00"])
    assert at.exit_code == 0, at.output
    assert [card.balance for card in db.scalars(select(GiftCard))] == [10 ** 15]
