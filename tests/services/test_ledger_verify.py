"""`flask ledger verify` and the periodic maturing of pending accruals."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from app.database.engine import utcnow
from app.models import LedgerEntry, RewardAccount
from app.services.customers import profiles
from app.services.rewards import accounts, ledger, verification
from app.services.unit_of_work import UnitOfWork
from worker.periodic import TASKS, mature_rewards, run_periodic_tasks

CARDS = "http://127.0.0.1:8000"  # where card links point


def _customer(app, company_id, phone, credit=0):
    session = app.extensions["session_factory"]()
    now = utcnow()
    made = profiles.enrol_customer(session, company_id, phone=phone, first_name="Анна",
                                   public_base_url=CARDS, now=now)
    if credit:
        accounts.adjust(session, company_id, made.customer.id, amount=credit, basis="opening", now=now)
    session.commit()
    session.close()
    return made.customer.id


def _pending(app, company_id, customer_id, amount, available_in):
    session = app.extensions["session_factory"]()
    now = utcnow()
    account = ledger.lock(UnitOfWork.of(session), company_id, customer_id, now)
    ledger.post(account, type="ACCRUAL", amount=amount, now=now, status="PENDING",
                available_at=now + available_in)
    session.commit()
    session.close()


def test_verify_finds_nothing_on_a_consistent_ledger(app, tenant):
    _customer(app, tenant.company_id, "+79120000001", credit=1000)
    _customer(app, tenant.company_id, "+79120000002")
    result = app.test_cli_runner().invoke(args=["ledger", "verify"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "0 differences in 2 accounts"


def test_verify_prints_a_corrupted_balance_and_exits_non_zero(app, tenant, other_tenant, db):
    corrupt = _customer(app, tenant.company_id, "+79120000001", credit=1000)
    _customer(app, tenant.company_id, "+79120000002", credit=500)
    _customer(app, other_tenant.company_id, "+79120000003", credit=300)
    db.execute(update(RewardAccount).where(RewardAccount.customer_id == corrupt)
               .values(available=RewardAccount.available + 1, pending=7))
    db.commit()

    result = app.test_cli_runner().invoke(args=["ledger", "verify"])
    assert result.exit_code != 0
    lines = result.output.splitlines()
    assert lines[-1] == "2 differences in 3 accounts"
    assert f"{tenant.company_id} {corrupt} pending: stored 7, computed 0" in lines
    assert f"{tenant.company_id} {corrupt} available: stored 1001, computed 1000" in lines

    # Limited to the other company, there is nothing to report.
    clean = app.test_cli_runner().invoke(args=["ledger", "verify", other_tenant.company_id])
    assert clean.exit_code == 0
    assert clean.output.splitlines()[-1] == "0 differences in 1 accounts"


def test_verify_counts_active_holds_as_reserved(app, tenant, db):
    customer_id = _customer(app, tenant.company_id, "+79120000001", credit=1000)
    session = app.extensions["session_factory"]()
    account = ledger.lock(UnitOfWork.of(session), tenant.company_id, customer_id, utcnow())
    ledger.reserve(account, 400, utcnow())  # a reservation without its hold row
    session.commit()
    session.close()
    differences = {(d.field, d.stored, d.computed) for d in verification.verify(db)}
    assert differences == {("reserved", 400, 0), ("available", 600, 1000)}


def test_the_periodic_task_matures_due_accruals(app, tenant, db):
    due = _customer(app, tenant.company_id, "+79120000001")
    later = _customer(app, tenant.company_id, "+79120000002")
    _pending(app, tenant.company_id, due, 500, timedelta(days=1))
    _pending(app, tenant.company_id, due, 300, timedelta(days=3))
    _pending(app, tenant.company_id, later, 700, timedelta(days=5))
    assert ("mature rewards", mature_rewards) in TASKS

    results = run_periodic_tasks(app, now=utcnow() + timedelta(days=2))
    assert results["mature rewards"] == 1
    db.expire_all()
    stored = {a.customer_id: a for a in db.scalars(select(RewardAccount))}
    assert (stored[due].available, stored[due].pending) == (500, 300)
    assert stored[due].next_maturity_at > utcnow() + timedelta(days=2)
    assert (stored[later].available, stored[later].pending) == (0, 700)
    statuses = sorted((e.amount, e.status) for e in db.scalars(select(LedgerEntry)))
    assert statuses == [(300, "PENDING"), (500, "ACTIVE"), (700, "PENDING")]
    assert verification.verify(db) == []

    # Nothing more is due: the next run has nothing to do.
    assert run_periodic_tasks(app, now=utcnow() + timedelta(days=2))["mature rewards"] == 0


def test_maturing_commits_a_small_batch_of_accounts_at_a_time(app, tenant, db):
    from sqlalchemy import event

    from worker.periodic import MATURE_BATCH

    count = 2 * MATURE_BATCH + 5
    for n in range(count):
        customer_id = _customer(app, tenant.company_id, f"+7912{n:07d}")
        _pending(app, tenant.company_id, customer_id, 100, timedelta(days=1))
    session = app.extensions["session_factory"]()
    matured_by_commit = []

    def count_matured(_session):
        db.rollback()  # a fresh snapshot
        matured_by_commit.append(db.scalar(
            select(func.count()).select_from(RewardAccount).where(RewardAccount.available == 100)))

    event.listen(session, "after_commit", count_matured)
    assert mature_rewards(session, utcnow() + timedelta(days=2)) == count
    session.close()
    # Each batch commits on its own: no transaction holds more than MATURE_BATCH accounts.
    assert matured_by_commit == [MATURE_BATCH, 2 * MATURE_BATCH, count]
    assert {a.available for a in db.scalars(select(RewardAccount))} == {100}
    assert verification.verify(db) == []


def test_verify_reports_its_progress_batch_by_batch(app, tenant, other_tenant, db):
    for n in range(3):
        _customer(app, tenant.company_id, f"+7912000001{n}", credit=100)
    corrupt = _customer(app, other_tenant.company_id, "+79120000020", credit=100)
    _customer(app, other_tenant.company_id, "+79120000021")
    db.execute(update(RewardAccount).where(RewardAccount.customer_id == corrupt)
               .values(available=5))
    db.commit()

    result = app.test_cli_runner().invoke(args=["ledger", "verify", "--batch", "2"])
    assert result.exit_code == 1
    # A query at most 2 accounts of one company: the first has 3 (2 + 1), the other 2.
    first = sorted((tenant.company_id, other_tenant.company_id))[0]
    done = [2, 3, 5] if first == tenant.company_id else [2, 4, 5]
    assert result.stderr.splitlines() == [f"verified {n} of 5 accounts" for n in done]
    assert result.stdout.splitlines() == [
        f"{other_tenant.company_id} {corrupt} available: stored 5, computed 100",
        "1 differences in 5 accounts"]
    # Every batch size finds the same differences as one query over all.
    for batch in (1, 2, 3, 4, 5, 6):
        assert verification.verify(db, batch=batch) == verification.verify(db)
        assert len(verification.verify(db, batch=batch)) == 1


def test_verify_of_a_few_accounts_is_quiet_on_stderr(app, tenant):
    _customer(app, tenant.company_id, "+79120000001", credit=1000)
    result = app.test_cli_runner().invoke(args=["ledger", "verify", "--batch", "2"])
    assert result.exit_code == 0 and result.stderr == ""


def test_verify_prints_lots_that_disagree_with_the_ledger(app, tenant, db):
    from app.models import RewardLot

    over = _customer(app, tenant.company_id, "+79120000001", credit=1000)
    under = _customer(app, tenant.company_id, "+79120000002", credit=500)
    db.execute(update(RewardLot).where(RewardLot.customer_id == over).values(remaining=1200))
    db.execute(update(RewardLot).where(RewardLot.customer_id == under).values(remaining=-5))
    db.commit()
    over_lot, under_lot = (db.scalar(select(RewardLot.id).where(RewardLot.customer_id == who))
                           for who in (over, under))
    result = app.test_cli_runner().invoke(args=["ledger", "verify"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[-1] == "4 differences in 2 accounts"
    assert f"{tenant.company_id} {over} lots remaining: stored 1200, computed 1000" in lines
    assert f"{tenant.company_id} {over} lot {over_lot} remaining (of 1000): stored 1200, computed 1000" in lines
    assert f"{tenant.company_id} {under} lots remaining: stored -5, computed 500" in lines
    assert f"{tenant.company_id} {under} lot {under_lot} remaining (of 500): stored -5, computed 0" in lines
    # Verified an account a query, each difference is still found once.
    assert sorted(map(str, verification.verify(db, batch=1))) == sorted(lines[:-1])


def test_a_matured_accrual_becomes_a_lot_that_expires_a_lifetime_after_it_matured(app, tenant, db):
    from app.models import RewardLot
    from app.services.tenancy import companies

    companies.update_program(db, tenant.company_id, points_lifetime_days=30)
    db.commit()
    customer_id = _customer(app, tenant.company_id, "+79120000001")
    _pending(app, tenant.company_id, customer_id, 500, timedelta(days=1))
    assert not db.scalars(select(RewardLot)).all()  # pending points are no lot yet
    run_periodic_tasks(app, now=utcnow() + timedelta(days=2))
    db.expire_all()
    [lot] = db.scalars(select(RewardLot)).all()
    entry = db.scalar(select(LedgerEntry).where(LedgerEntry.customer_id == customer_id))
    assert (lot.id, lot.amount, lot.remaining) == (entry.id, 500, 500)
    assert lot.expires_at == entry.available_at + timedelta(days=30)
    assert verification.verify(db) == []


def test_expiring_commits_a_small_batch_of_accounts_at_a_time(app, tenant, db):
    from sqlalchemy import event

    from worker.periodic import EXPIRE_BATCH, expire_points

    count = 2 * EXPIRE_BATCH + 3
    for n in range(count):
        customer_id = _customer(app, tenant.company_id, f"+7912{n:07d}")
        session = app.extensions["session_factory"]()
        accounts.adjust(session, tenant.company_id, customer_id, amount=100, basis="promo",
                        now=utcnow(), expires_at=utcnow() + timedelta(hours=1))
        session.commit()
        session.close()
    session = app.extensions["session_factory"]()
    expired_by_commit = []

    def count_expired(_session):
        db.rollback()
        expired_by_commit.append(db.scalar(
            select(func.count()).select_from(RewardAccount).where(RewardAccount.available == 0)))

    event.listen(session, "after_commit", count_expired)
    assert expire_points(session, utcnow() + timedelta(hours=2)) == count
    session.close()
    assert expired_by_commit[:3] == [EXPIRE_BATCH, 2 * EXPIRE_BATCH, count]
    assert verification.verify(db) == []
