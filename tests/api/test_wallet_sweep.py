"""The upkeep's wallet push sweep (docs/api.md#wallet): it finds the passes changed without an event
(accruals maturing) by reading only the accounts changed since its last run, less a margin for
the changes committed after it (docs/decisions.md, the wallet card)."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from app.database.engine import utcnow
from app.models import LedgerEntry, RewardAccount, WalletRegistration
from app.services.cards.pass_pushes import SWEEP_MARGIN
from app.services.rewards import ledger
from app.services.unit_of_work import UnitOfWork
from testbed.cards import make_customer
from testbed.phone import Phone, pass_json
from tests.api.test_wallet_pushes import certificates, push_service, wallet_app  # noqa: F401
from tests.api.wallet_helpers import settled
from worker import pushes
from worker.__main__ import UPKEEP_JOB_TIMEOUT
from worker.periodic import run_periodic_tasks


def registered(app, db, tenant, **customer):
    customer = make_customer(db, tenant.company_id, **customer)
    settled(db, customer, seconds=3600)  # its pass last changed an hour ago
    phone = Phone.adding(app.test_client(), customer, push_token=customer.id.replace("-", ""))
    assert phone.register().status_code == 201
    return customer, phone


def waiting(db, customer) -> bool:
    """Whether a push waits for the customer's device."""
    db.expire_all()
    return db.scalar(select(WalletRegistration.push_due_at).where(
        WalletRegistration.company_id == customer.company_id,
        WalletRegistration.customer_id == customer.id)) is not None


def push_jobs(app, customer, phone) -> str:
    """The job the sweep enqueued for the device, run here."""
    with app.app_context():
        return pushes.push(customer.company_id, customer.id, phone.device)


def came_due(db, customer) -> None:
    """The customer's pending accrual is due: its day has come (nothing has touched it)."""
    mine = {"company_id": customer.company_id, "customer_id": customer.id}
    past = utcnow() - timedelta(seconds=1)
    db.execute(update(LedgerEntry).filter_by(**mine, status="PENDING").values(available_at=past))
    db.execute(update(RewardAccount).filter_by(**mine).values(next_maturity_at=past))
    db.commit()


def changed_late(db, customer, moment) -> None:
    """A change of the pass dated `moment` (when its transaction took it) committed now."""
    account = ledger.lock(UnitOfWork.of(db), customer.company_id, customer.id, moment)
    ledger.post(account, type="ADJUSTMENT", amount=100, now=moment, basis="late")
    db.commit()


def test_an_accrual_maturing_is_pushed_by_the_sweep_and_an_unchanged_pass_is_not_again(
        wallet_app, push_service, tenant, db):  # noqa: F811
    customer, phone = registered(wallet_app, db, tenant, pending=5000)
    came_due(db, customer)
    results = run_periodic_tasks(wallet_app)
    assert results["mature rewards"] >= 1 and results["wallet push sweep"] >= 1
    assert waiting(db, customer)  # maturing records no event: only the sweep saw it
    assert push_jobs(wallet_app, customer, phone) == "pushed"
    assert len(push_service.pushes_to(phone.push_token)) == 1

    run_periodic_tasks(wallet_app)
    assert not waiting(db, customer)
    assert push_jobs(wallet_app, customer, phone) == "not due"
    assert len(push_service.pushes_to(phone.push_token)) == 1


def test_a_change_committed_after_a_sweep_passed_its_moment_is_found_by_the_next(
        wallet_app, push_service, tenant, db):  # noqa: F811
    customer, phone = registered(wallet_app, db, tenant, available=1000)
    moment = utcnow()  # the change's transaction takes its moment...
    run_periodic_tasks(wallet_app)  # ...a sweep runs after it, and its mark passes the moment...
    assert not waiting(db, customer)
    changed_late(db, customer, moment)  # ...and then the change commits
    run_periodic_tasks(wallet_app)
    assert waiting(db, customer)
    assert push_jobs(wallet_app, customer, phone) == "pushed"


def test_the_sweep_reads_only_what_changed_since_its_last_run_less_the_margin(
        wallet_app, tenant, db):  # noqa: F811
    customer, _ = registered(wallet_app, db, tenant, available=1000)
    run_periodic_tasks(wallet_app)
    # Dated before the margin: no transaction lasts that long, so no change is; one that did
    # is not read again (a sweep reading every account would mark it).
    changed_late(db, customer, utcnow() - SWEEP_MARGIN - timedelta(minutes=1))
    run_periodic_tasks(wallet_app)
    assert not waiting(db, customer)


def test_the_margin_outlasts_an_upkeep_job():
    """An upkeep task dates its changes at its start and may run until the job's timeout."""
    assert SWEEP_MARGIN > timedelta(seconds=UPKEEP_JOB_TIMEOUT)


def test_a_change_of_the_tiers_list_moves_every_pass_and_the_sweep_pushes_them(
        wallet_app, push_service, tenant, db):  # noqa: F811
    # The tier a pass shows follows the program's list, which writes no account: the pass's
    # Last-Modified and update tag move with the list, and the sweep pushes its devices.
    customer, phone = registered(wallet_app, db, tenant, available=1000)
    db.execute(update(RewardAccount).where(RewardAccount.customer_id == customer.id)
               .values(spend=500000))  # 5,000.00 spent (its updated_at as it was)
    db.commit()
    run_periodic_tasks(wallet_app)  # the sweep's mark is set: nothing of this pass is behind
    assert not waiting(db, customer)
    held = phone.latest()
    card = pass_json(held.data)["storeCard"]
    assert card["auxiliaryFields"] == [{"key": "member", "label": "Member", "value": "Anna"}]
    tag = phone.updated_since().get_json()["lastUpdated"]
    assert phone.latest(held.headers["Last-Modified"]).status_code == 304

    client = wallet_app.test_client()
    tiers = [{"name": "Base", "minSpend": "0.00", "accrualPercent": "5"},
             {"name": "Gold", "minSpend": "3000.00", "accrualPercent": "10"}]
    changed = client.patch("/v1/program", json={"tiers": tiers}, headers=tenant.headers())
    assert changed.status_code == 200, changed.get_json()
    unchanged = client.patch("/v1/program", json={"tiers": tiers, "holdTtlSeconds": 600},
                             headers=tenant.headers())
    assert unchanged.status_code == 200, unchanged.get_json()

    assert phone.updated_since(tag).get_json()["serialNumbers"] == [customer.id]
    fetched = phone.latest(held.headers["Last-Modified"])
    assert fetched.status_code == 200
    assert {field["key"]: field["value"] for field in
            pass_json(fetched.data)["storeCard"]["auxiliaryFields"]} == {"member": "Anna",
                                                                          "tier": "Gold"}
    run_periodic_tasks(wallet_app)
    assert waiting(db, customer)
    assert push_jobs(wallet_app, customer, phone) == "pushed"
    assert len(push_service.pushes_to(phone.push_token)) == 1
    run_periodic_tasks(wallet_app)  # the same list again (holdTtlSeconds alone changed): no push
    assert push_jobs(wallet_app, customer, phone) == "not due"
    assert len(push_service.pushes_to(phone.push_token)) == 1
