"""The two counters of gift-card lookup misses: a window of a minute from a key's first miss."""
from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from redis import Redis

from app.database.engine import utcnow
from app.services.cards.gift_cards import (MISS_LIMIT, MISS_WINDOW_SECONDS, DatabaseMissCounter,
                                           RedisMissCounter)
from tests.conftest import REDIS_URL


def test_database_window_runs_a_minute_from_the_first_miss(db, tenant):
    counter, key, start = DatabaseMissCounter(), str(uuid.uuid4()), utcnow()
    assert counter.record(db, tenant.company_id, key, start) == (1, MISS_WINDOW_SECONDS)
    for i in range(2, MISS_LIMIT + 1):
        assert counter.record(db, tenant.company_id, key, start + timedelta(seconds=i))[0] == i
    assert counter.blocked_for(db, tenant.company_id, key, start + timedelta(seconds=20)) == 40
    assert counter.blocked_for(db, tenant.company_id, key, start + timedelta(seconds=59)) == 1
    assert counter.blocked_for(db, tenant.company_id, key, start + timedelta(seconds=60)) == 0
    # The next miss opens a new window instead of adding to the old one.
    later = start + timedelta(seconds=61)
    assert counter.record(db, tenant.company_id, key, later) == (1, MISS_WINDOW_SECONDS)


def test_database_counter_does_not_block_below_the_limit(db, tenant):
    counter, key, now = DatabaseMissCounter(), str(uuid.uuid4()), utcnow()
    assert counter.blocked_for(db, tenant.company_id, key, now) == 0
    for _ in range(MISS_LIMIT - 1):
        counter.record(db, tenant.company_id, key, now)
    assert counter.blocked_for(db, tenant.company_id, key, now) == 0
    counter.record(db, tenant.company_id, key, now)
    assert counter.blocked_for(db, tenant.company_id, key, now) == MISS_WINDOW_SECONDS


@pytest.mark.redis
def test_redis_key_expires_a_minute_after_the_first_miss_and_is_never_extended(db, tenant):
    redis = Redis.from_url(REDIS_URL)
    counter, credential = RedisMissCounter(redis), str(uuid.uuid4())
    key = RedisMissCounter.PREFIX + credential
    try:
        misses, wait = counter.record(db, tenant.company_id, credential, utcnow())
        assert misses == 1 and 0 < redis.ttl(key) <= MISS_WINDOW_SECONDS and wait == redis.ttl(key)
        redis.expire(key, 5)  # as if 55 seconds had passed
        for i in range(2, MISS_LIMIT + 1):
            misses, wait = counter.record(db, tenant.company_id, credential, utcnow())
            assert misses == i and 1 <= wait <= 5  # later misses do not push the window on
        assert 1 <= counter.blocked_for(db, tenant.company_id, credential, utcnow()) <= 5
        redis.delete(key)  # the window ends
        assert counter.blocked_for(db, tenant.company_id, credential, utcnow()) == 0
    finally:
        redis.delete(key)
        redis.close()
