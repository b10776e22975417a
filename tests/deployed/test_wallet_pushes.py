"""docs/api.md#wallet against the Procfile's processes: Apple's push service goes away while a
customer buys, and once it is back each registered device hears once that the pass changed,
however many changes happened meanwhile. A deployment of its own, signing passes with a test
chain and pushing to the HTTP/2 stand-in of testbed/push_service.py."""
from __future__ import annotations

import time
import uuid

import pytest
import requests

from testbed.cards import PASS_TYPE_ID, TEAM_ID, make_pass_certificates
from testbed.deployment import Deployment
from testbed.phone import Phone, pass_json
from testbed.push_service import PushService
from testbed.registers import Tally

pytestmark = [pytest.mark.deployed, pytest.mark.slow]

DOWN_AT_LEAST = 6  # seconds the push service stays away after the last change
# Attempts 5 s apart, for longer than the service is away: the push still waits for it when it
# returns. Not closer: a job claims a push due within EARLY_TOLERANCE (2 s), so the job of a
# change arriving just before a retry would make that retry early, and the scheduled one too.
RETRY_SCHEDULE = "5,5,5,5,5,5,5,5"
WAIT_SECONDS = 30


class Site(requests.Session):
    """What a phone reaches: the deployment's public address, paths as the pass gives them."""

    def __init__(self, base_url: str):
        super().__init__()
        self.base_url = base_url

    def request(self, method, path, **kwargs):
        return super().request(method, self.base_url + path, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def push_service(tmp_path_factory):
    certificates = make_pass_certificates(tmp_path_factory.mktemp("wallet"))
    service = PushService(tmp_path_factory.mktemp("apns"), certificates.wwdr_file).start()
    service.certificates = certificates
    yield service
    service.stop()


@pytest.fixture(scope="module")
def deployment(push_service):
    """A separate deployment (the shared one signs no passes); named as the shared one so a
    failure shows its processes' logs."""
    certificates = push_service.certificates
    built = Deployment()
    try:
        yield built.start(
            registers=1, WALLET_CERT_FILE=str(certificates.cert_file),
            WALLET_KEY_FILE=str(certificates.key_file),
            WALLET_WWDR_FILE=str(certificates.wwdr_file), WALLET_PASS_TYPE_ID=PASS_TYPE_ID,
            WALLET_TEAM_ID=TEAM_ID, APNS_URL=push_service.url,
            APNS_CA_BUNDLE=str(push_service.ca_file), APNS_RETRY_SCHEDULE=RETRY_SCHEDULE)
    finally:
        built.close()


def phone_with_pass(deployment, customer_id: str, device: str, push_token: str) -> Phone:
    """A phone that added the customer's pass from the card page (its address, the cardUrl
    of the customer's enrolment, read where it is kept)."""
    [(card_token,)] = deployment.query("SELECT card_token FROM customers WHERE id = %s",
                                       customer_id)
    site = Site(f"http://127.0.0.1:{deployment.port}")
    response = site.get(f"/cards/{card_token}.pkpass")
    assert response.status_code == 200, response.text
    return Phone(site, device, push_token, pass_json(response.content))


def registrations(deployment, customer_id: str) -> list[tuple]:
    """(push token, attempts of the waiting push, whether one waits, whether the pass changed
    since the last push was marked) of the customer's devices."""
    return deployment.query(
        "SELECT r.push_token, r.push_attempts, r.push_due_at IS NOT NULL,"
        " r.seen_updated_at < a.updated_at FROM wallet_registrations r"
        " JOIN reward_accounts a USING (company_id, customer_id)"
        " WHERE r.company_id = %s AND r.customer_id = %s ORDER BY r.push_token",
        deployment.company_id, customer_id)


def wait_until(condition, what: str, timeout: float = WAIT_SECONDS):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.2)
    return value


def test_pushes_wait_for_the_push_service_and_go_out_once_it_returns(deployment, push_service,
                                                                       figures):
    register = deployment.registers[0]
    phones = [phone_with_pass(deployment, register.customer_id, f"phone-{n}", f"70ce{n:04x}")
              for n in range(2)]
    for phone in phones:
        assert phone.register().status_code == 201

    push_service.stop()  # connection refused from here on
    tally = Tally()
    register.checkout(f"W-{uuid.uuid4().hex[:8]}", tally)
    # The worker has tried each device's push and failed: the next changes fold into it.
    wait_until(lambda: all(attempts >= 1 for _, attempts, _, _ in
                           registrations(deployment, register.customer_id)),
               "the worker tried the pushes while the push service was away")
    for _ in range(2):
        register.checkout(f"W-{uuid.uuid4().hex[:8]}", tally)
    # Every change marked: each device's one waiting push covers them all.
    wait_until(lambda: not any(behind for *_, behind in
                               registrations(deployment, register.customer_id)),
               "the dispatch run marked the later changes")
    time.sleep(DOWN_AT_LEAST)
    attempts_while_down = {token: attempts for token, attempts, _, _ in
                           registrations(deployment, register.customer_id)}
    push_service.start()  # on the same port
    back = time.monotonic()

    for phone in phones:
        wait_until(lambda: push_service.pushes_to(phone.push_token),
                   f"a push reached {phone.device} after the service's return")
    arrived_s = round(time.monotonic() - back, 1)
    wait_until(lambda: not any(waiting for _, _, waiting, _ in
                               registrations(deployment, register.customer_id)),
               "no push left waiting")
    figures(checkouts=len(tally.committed), attempts_while_down=attempts_while_down,
            pushes_arrived_after_return_s=arrived_s,
            pushes={phone.device: len(push_service.pushes_to(phone.push_token))
                    for phone in phones})
    assert not tally.failures, tally.failures
    for phone in phones:
        [push] = push_service.pushes_to(phone.push_token)  # once, for three checkouts
        assert (push.method, push.http_version, push.scheme, push.topic, push.body) == (
            "POST", "2", "https", PASS_TYPE_ID, b"{}")
