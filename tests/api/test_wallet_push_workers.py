"""Wallet pushes as deployed (docs/api.md#wallet, #limits): a commit's events reach a real `python
-m worker` through Redis, its dispatch run marks the pushes, and its push jobs reach the HTTP/2
stand-in for Apple's service; with two workers on the queue each push is made once."""
from __future__ import annotations

import pytest
from rq.registry import ScheduledJobRegistry, StartedJobRegistry
from sqlalchemy import select

from app.models import WalletRegistration
from app.operations.delivery_queue import enqueue_pushes
from testbed.cards import PASS_TYPE_ID, make_customer
from testbed.phone import Phone
from tests.api.test_rewards import adjust
from tests.api.test_wallet_pushes import certificates, push_service, wallet_app  # noqa: F401
from tests.webhooks.test_delivery import Workers, eventually

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture(scope="module")
def workers(settings, certificates, push_service, tmp_path_factory):  # noqa: F811
    wallet = certificates.wallet
    manager = Workers(settings, str(push_service.ca_file), tmp_path_factory.mktemp("workers"), {
        "WALLET_CERT_FILE": wallet["cert_file"], "WALLET_KEY_FILE": wallet["key_file"],
        "WALLET_WWDR_FILE": wallet["wwdr_file"], "WALLET_PASS_TYPE_ID": PASS_TYPE_ID,
        "WALLET_TEAM_ID": wallet["team_id"], "APNS_URL": push_service.url,
        "APNS_CA_BUNDLE": str(push_service.ca_file), "APNS_RETRY_SCHEDULE": "1,1",
        # The upkeep's sweep (which also finds changed passes) only as a worker starts: what
        # pushes within the tests is the dispatch run's marking and its jobs.
        "UPKEEP_INTERVAL_SECONDS": "3600"})
    manager.queue.empty()
    try:
        yield manager
    finally:
        manager.stop()


def phones_of(client, customer, devices: int) -> list[Phone]:
    phones = [Phone.adding(client, customer, device=f"phone-{n}",
                           push_token=f"{customer.id.replace('-', '')}{n}")
              for n in range(devices)]
    for phone in phones:
        assert phone.register().status_code == 201
    return phones


def committed(response) -> None:
    assert response.status_code == 201, response.get_json()
    response.close()  # the server closes the response; that runs the after-commit hand-off


def all_done(workers, db) -> bool:
    """No push waits in the database and no job is queued, running or scheduled."""
    db.rollback()  # a fresh snapshot
    waiting = db.scalar(select(WalletRegistration.customer_id)
                        .where(WalletRegistration.push_due_at.is_not(None)).limit(1))
    queue = workers.queue
    return (waiting is None and queue.count == 0 and StartedJobRegistry(queue=queue).count == 0
            and ScheduledJobRegistry(queue=queue).count == 0)


def test_a_commit_is_pushed_by_a_worker_process_through_redis(wallet_app, push_service,
                                                              workers, tenant, db):
    client = wallet_app.test_client()
    worker = workers.running()
    customer = make_customer(db, tenant.company_id, available=10000)
    [phone] = phones_of(client, customer, 1)

    committed(adjust(client, tenant, customer.id, "10.00"))
    eventually(lambda: push_service.pushes_to(phone.push_token), "the push arrives", [worker])
    eventually(lambda: all_done(workers, db), "nothing left to do", [worker])
    [push] = push_service.pushes_to(phone.push_token)
    assert (push.method, push.http_version, push.scheme, push.topic, push.body) == (
        "POST", "2", "https", PASS_TYPE_ID, b"{}")


def test_two_workers_make_each_push_once(wallet_app, push_service, workers, tenant, db):
    client = wallet_app.test_client()
    pair = [workers.running(), workers.alongside()]
    customers = [make_customer(db, tenant.company_id, available=10000) for _ in range(8)]
    phones = [phone for customer in customers for phone in phones_of(client, customer, 2)]
    keys = [(tenant.company_id, phone.serial, phone.device) for phone in phones]

    for customer in customers:
        committed(adjust(client, tenant, customer.id, "10.00", key=f"two-{customer.id}"))
        # Each push asked for again, as a lost job's sweep or a second dispatch would: both
        # workers take jobs for the same registrations.
        enqueue_pushes(wallet_app.config["SETTINGS"], keys * 2)
    eventually(lambda: all(push_service.pushes_to(phone.push_token) for phone in phones),
               "every device's push arrives", pair)
    eventually(lambda: all_done(workers, db), "nothing left to do", pair)

    made = {phone.push_token: len(push_service.pushes_to(phone.push_token)) for phone in phones}
    assert made == {phone.push_token: 1 for phone in phones}
    took = [worker.log.read_text(errors="replace").count("worker.pushes.push(")
            for worker in pair]
    assert all(took), f"push jobs per worker: {took}"  # both took part
