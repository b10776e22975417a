"""docs/api.md#limits: through a PgBouncer in transaction pooling (its defaults: no startup options,
no state kept between transactions) over a database whose own time zone is Asia/Kathmandu,
every moment is the UTC instant and no session setting, lock, prepared statement or LISTEN
outlives a transaction. Runs in the PgBouncer pass of `make test` (TEST_THROUGH_PGBOUNCER=1),
which runs the rest of the suite again that way too (Makefile)."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.database.engine import utcnow
from tests.api.locations_helpers import create_store
from tests.bouncer import DATABASE_ZONE
from tests.checkout.conftest import Register, build_shop, line
from tests.conftest import SUITE_DATABASE_URL
from tests.program.helpers import create_campaign
from worker.periodic import expire_points

pytestmark = [pytest.mark.postgres, pytest.mark.pgbouncer]
LAST_HOUR_OF_9999 = "9999-12-31T23:00:00.000Z"  # in the year 10000 at Kathmandu


def _shown(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def _in_a_new_transaction(app, sql: str):
    """One statement in a transaction of its own through the pool: PgBouncer hands it the
    server connection the last transaction released."""
    with app.extensions["engine"].connect() as connection:
        return connection.exec_driver_sql(sql).scalar()


def test_the_app_reaches_a_database_in_its_own_zone_through_pgbouncer(app, settings):
    assert make_url(settings.database_url).port != make_url(SUITE_DATABASE_URL).port
    assert _in_a_new_transaction(app, "SHOW timezone") == DATABASE_ZONE


def test_a_sales_moments_are_the_utc_instants(client, app, tenant):
    register = Register(client, build_shop(app, tenant))
    before = utcnow()
    sale = register.checkout(register.shop.customer(), [line("1", "1000.00")])["sale"]
    after = utcnow()
    committed = _shown(sale["committedAt"])
    assert before - timedelta(milliseconds=1) <= committed <= after
    found = register.lookup(sale["externalReceiptId"])
    assert found["committedAt"] == sale["committedAt"]
    assert found["accrualAvailableAt"] == sale["accrualAvailableAt"]


def test_a_moment_late_in_9999_reads_back_as_itself(client, tenant):
    """Its local time at Kathmandu is in the year 10000, which Python cannot hold: a driver
    reading the session's zone would fail the read."""
    campaign = create_campaign(client, tenant, endsAt=LAST_HOUR_OF_9999)
    listed = client.get("/v1/campaigns", headers=tenant.headers())
    assert listed.status_code == 200, listed.get_json()
    [shown] = [c for c in listed.get_json()["items"] if c["id"] == campaign["id"]]
    assert shown["endsAt"] == LAST_HOUR_OF_9999


def test_settings_made_for_one_transaction_are_gone_after_it(client, app, tenant, db):
    store = create_store(client, tenant)
    synced = client.post("/v1/catalog-syncs", json={"storeId": store["id"], "items": [
        {"sku": "A", "name": "Tea", "price": "100.00"}]},
                         headers=tenant.headers(Idempotency_Key=uuid.uuid4().hex))
    assert synced.status_code == 201, synced.get_json()  # planner settings for its reconcile
    assert _changed_settings(app) == ""
    expire_points(db, utcnow())  # its batches commit with synchronous_commit off
    db.commit()
    assert _changed_settings(app) == ""
    report = client.get("/v1/reports/liability", headers=tenant.headers())
    assert report.status_code == 200, report.get_json()  # REPEATABLE READ, READ ONLY for one
    assert _changed_settings(app) == ""


def _changed_settings(app) -> str:
    """The settings a SET made on the server connection that outlived its transaction. A
    transaction's own SET TRANSACTION leaves pg_settings naming `transaction_isolation` and
    `transaction_read_only` as set by the session, at their defaults, which the next
    transaction does not inherit: a setting counts when its value is not the one it resets to."""
    return _in_a_new_transaction(app, "SELECT coalesce(string_agg(name, ', '), '') FROM pg_settings"
                                      " WHERE source = 'session'"
                                      " AND setting IS DISTINCT FROM reset_val")


def test_no_lock_prepared_statement_or_listen_outlives_a_request(client, app, tenant):
    """OTP requests take an advisory lock on the phone; the register's path reads much."""
    register = Register(client, build_shop(app, tenant))
    register.checkout(register.shop.customer("50.00"), [line("1", "100.00")], redeem="10.00")
    sent = client.post("/v1/otp-challenges", json={"phone": "+79161234567", "purpose": "ENROLLMENT"},
                       headers=tenant.headers())
    assert sent.status_code in (201, 202), sent.get_json()
    server = create_engine(SUITE_DATABASE_URL)
    with server.connect() as connection:
        locks = connection.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                                        " AND database = (SELECT oid FROM pg_database"
                                        " WHERE datname = :name)"),
                                   {"name": make_url(app.config['SETTINGS'].database_url).database})
        assert locks.scalar() == 0
    server.dispose()
    assert _in_a_new_transaction(app, "SELECT count(*) FROM pg_prepared_statements") == 0
    assert _in_a_new_transaction(app, "SELECT count(*) FROM pg_listening_channels()") == 0


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "America/New_York", DATABASE_ZONE])
@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00.000Z", "0001-01-01T03:00:00.500Z",
                                    "2026-03-29T01:30:00.123Z", "9999-12-31T23:59:59.999Z"])
def test_the_driver_reads_each_moment_in_utc_from_any_zone(app, zone, moment):
    """Year 1 is BC west of Greenwich, late 9999 is the year 10000 east of it."""
    with app.extensions["engine"].begin() as connection:
        connection.execute(text("SELECT set_config('timezone', :zone, true)"), {"zone": zone})
        read = connection.execute(text("SELECT CAST(:moment AS timestamptz), "
                                       "ARRAY[CAST(:moment AS timestamptz)]"),
                                  {"moment": moment}).one()
    assert tuple(read) == (_shown(moment), [_shown(moment)])
    assert read[0].utcoffset() == timedelta(0)
