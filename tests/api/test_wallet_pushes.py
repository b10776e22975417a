"""Pushes to the devices of a changed pass (docs/api.md#wallet), received by a real HTTP/2 server
over TLS standing where Apple's is, which requires the pass type certificate as the client's."""
from __future__ import annotations

import dataclasses
import logging
import ssl

import httpx
import pytest

from app import create_app
from app.models import WalletRegistration
from testbed.cards import PASS_TYPE_ID, make_customer, make_pass_certificates
from testbed.phone import Phone
from testbed.push_service import PushService
from tests.api.test_rewards import adjust
from tests.api.wallet_helpers import checked
from tests.log_lines import written_log
from worker import pushes


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return make_pass_certificates(tmp_path_factory.mktemp("wallet"))


@pytest.fixture(scope="module")
def push_service(tmp_path_factory, certificates):
    service = PushService(tmp_path_factory.mktemp("apns"), certificates.wwdr_file).start()
    yield service
    service.stop()


@pytest.fixture
def wallet_app(settings, certificates, push_service):
    push_service.received.clear()
    push_service.answers.clear()
    app = checked(create_app(dataclasses.replace(
        settings, wallet=certificates.wallet, apns_url=push_service.url,
        apns_ca_bundle=str(push_service.ca_file), apns_retry_schedule="0,0")))
    yield app
    app.extensions["engine"].dispose()


def push_waiting(app) -> int:
    """What the worker does with the pushes due: each made in this process."""
    with app.app_context():
        return pushes.push_waiting()


def test_a_change_pushes_once_to_each_registered_device_over_http2(wallet_app, push_service,
                                                                    tenant, db):
    client = wallet_app.test_client()
    customer = make_customer(db, tenant.company_id, available=10000)
    phones = [Phone.adding(client, customer, device=f"phone-{n}", push_token=f"aced{n}")
              for n in range(2)]
    for phone in phones:
        assert phone.register().status_code == 201
    bystander = Phone.adding(client, make_customer(db, tenant.company_id), push_token="0fdead")
    assert bystander.register().status_code == 201
    assert push_waiting(wallet_app) == 0  # nothing changed since they registered

    for amount in ("10.00", "20.00"):  # two changes, one push each device: coalesced
        assert adjust(client, tenant, customer.id, amount).status_code == 201
    assert push_waiting(wallet_app) == 2
    for phone in phones:
        [push] = push_service.pushes_to(phone.push_token)
        assert (push.method, push.http_version, push.scheme, push.topic, push.body) == (
            "POST", "2", "https", PASS_TYPE_ID, b"{}")
    assert push_service.pushes_to("0fdead") == []
    assert push_waiting(wallet_app) == 0  # each push is made once


def test_a_410_removes_the_registration_and_429_or_5xx_are_tried_again(wallet_app, push_service,
                                                                       tenant, db):
    client = wallet_app.test_client()
    customer = make_customer(db, tenant.company_id, available=10000)
    gone, busy = (Phone.adding(client, customer, device=device, push_token=token)
                  for device, token in (("old-phone", "90e"), ("new-phone", "b05e")))
    assert gone.register().status_code == busy.register().status_code == 201
    push_service.answers["90e"].append(410)
    push_service.answers["b05e"].extend([500, 503])
    assert adjust(client, tenant, customer.id, "5.00").status_code == 201

    for _ in range(3):  # the schedule here retries at once: "0,0"
        push_waiting(wallet_app)
    assert len(push_service.pushes_to("90e")) == 1
    assert len(push_service.pushes_to("b05e")) == 3  # 500, 503, then 200
    devices = [row.device_library_id for row in db.query(WalletRegistration)]
    assert devices == ["new-phone"]
    assert push_waiting(wallet_app) == 0


def test_a_push_the_service_keeps_refusing_is_given_up_until_the_pass_changes(wallet_app,
                                                                             push_service,
                                                                             tenant, db):
    client = wallet_app.test_client()
    customer = make_customer(db, tenant.company_id, available=10000)
    phone = Phone.adding(client, customer, push_token="57b0")
    assert phone.register().status_code == 201
    push_service.answers["57b0"].extend([500, 500, 500])
    assert adjust(client, tenant, customer.id, "5.00").status_code == 201
    for _ in range(4):
        push_waiting(wallet_app)
    assert len(push_service.pushes_to("57b0")) == 3  # three attempts for "0,0"
    assert adjust(client, tenant, customer.id, "6.00").status_code == 201
    assert push_waiting(wallet_app) == 1
    assert len(push_service.pushes_to("57b0")) == 4


def test_the_push_service_stand_in_refuses_a_client_without_the_pass_certificate(push_service):
    context = ssl.create_default_context(cafile=str(push_service.ca_file))
    with httpx.Client(http2=True, verify=context) as anonymous, pytest.raises(httpx.HTTPError):
        anonymous.post(f"{push_service.url}/3/device/abc", content=b"{}")


@pytest.mark.parametrize("reason", ["BadDeviceToken", "DeviceTokenNotForTopic"])
def test_a_400_refusing_the_device_token_removes_the_registration(wallet_app, push_service,
                                                                   tenant, db, reason):
    client = wallet_app.test_client()
    customer = make_customer(db, tenant.company_id, available=10000)
    refused, other = (Phone.adding(client, customer, device=device, push_token=token)
                      for device, token in (("dead-phone", "dead"), ("odd-phone", "0dd")))
    assert refused.register().status_code == other.register().status_code == 201
    push_service.answers["dead"].append((400, reason))
    push_service.answers["0dd"].append((400, "BadPriority"))  # ours to mend, not the device's
    assert adjust(client, tenant, customer.id, "5.00").status_code == 201
    assert push_waiting(wallet_app) == 2
    devices = [row.device_library_id for row in db.query(WalletRegistration)]
    assert devices == ["odd-phone"]

    assert adjust(client, tenant, customer.id, "6.00").status_code == 201
    assert push_waiting(wallet_app) == 1  # never pushed again; the other device still is
    assert len(push_service.pushes_to("dead")) == 1 and len(push_service.pushes_to("0dd")) == 2


@pytest.fixture
def chatty_wallet_app(settings, certificates, push_service):
    """The wallet app logging everything (DEBUG); the suite's level is set back after."""
    root = logging.getLogger()
    level = root.level
    app = create_app(dataclasses.replace(
        settings, wallet=certificates.wallet, apns_url=push_service.url,
        apns_ca_bundle=str(push_service.ca_file), log_level="DEBUG"))
    yield app
    app.extensions["engine"].dispose()
    root.setLevel(level)


def test_no_log_line_carries_a_push_token(chatty_wallet_app, push_service, tenant, db):
    client = chatty_wallet_app.test_client()
    customer = make_customer(db, tenant.company_id, available=10000)
    phone = Phone.adding(client, customer, push_token="5ec2e7c0ffee")
    assert phone.register().status_code == 201
    assert adjust(client, tenant, customer.id, "5.00").status_code == 201
    with written_log() as written:
        assert push_waiting(chatty_wallet_app) == 1
    assert len(push_service.pushes_to("5ec2e7c0ffee")) == 1
    assert "5ec2e7c0ffee" not in written.getvalue()
