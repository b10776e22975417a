"""Apple's Wallet web service (docs/api.md#wallet), the whole exchange a phone makes: download the
pass, register, ask what changed since a tag, fetch the pass (and 304), unregister, log."""
from __future__ import annotations

import pytest

from app.models import WalletPass, WalletRegistration
from testbed.cards import PASS_TYPE_ID, make_customer, make_pass_certificates, wallet_app
from testbed.phone import Phone, pass_json
from tests.api.test_rewards import adjust
from tests.api.wallet_helpers import checked, settled


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return make_pass_certificates(tmp_path_factory.mktemp("wallet"))


@pytest.fixture
def wallet_client(settings, certificates):
    app = checked(wallet_app(settings, certificates))
    yield app.test_client()
    app.extensions["engine"].dispose()


def test_the_pass_names_its_web_service_and_carries_a_token_of_its_own(wallet_client, tenant, db,
                                                                         settings):
    anna, boris = make_customer(db, tenant.company_id), make_customer(db, tenant.company_id)
    first, again = Phone.adding(wallet_client, anna), Phone.adding(wallet_client, anna)
    other = Phone.adding(wallet_client, boris)
    assert first.document["webServiceURL"] == settings.public_base_url + "/passkit"
    assert first.document["serialNumber"] == anna.id
    token = first.document["authenticationToken"]
    assert len(token) >= 32
    assert again.document["authenticationToken"] == token  # every download carries the same
    assert other.document["authenticationToken"] != token
    stored = db.get(WalletPass, (tenant.company_id, anna.id))
    assert stored is not None and token not in stored.token_digest  # a digest, not the token


def test_a_phone_registers_learns_of_a_change_fetches_the_pass_and_unregisters(wallet_client,
                                                                             tenant, db):
    customer = make_customer(db, tenant.company_id, available=10000)
    settled(db, customer)
    phone = Phone.adding(wallet_client, customer)

    assert phone.register().status_code == 201
    assert phone.register().status_code == 200  # already registered

    listed = phone.updated_since()
    assert listed.status_code == 200
    assert listed.get_json()["serialNumbers"] == [customer.id]
    tag = listed.get_json()["lastUpdated"]
    assert phone.updated_since(tag).status_code == 204  # nothing changed since

    fetched = phone.latest()
    assert fetched.status_code == 200 and fetched.mimetype == "application/vnd.apple.pkpass"
    assert pass_json(fetched.data)["storeCard"]["primaryFields"][0]["value"] == "100.00"
    assert phone.latest(fetched.headers["Last-Modified"]).status_code == 304

    response = adjust(wallet_client, tenant, customer.id, "25.00")
    assert response.status_code == 201, response.get_json()

    changed = phone.updated_since(tag)
    assert changed.status_code == 200 and changed.get_json()["serialNumbers"] == [customer.id]
    assert changed.get_json()["lastUpdated"] != tag
    refetched = phone.latest(fetched.headers["Last-Modified"])
    assert refetched.status_code == 200
    assert pass_json(refetched.data)["storeCard"]["primaryFields"][0]["value"] == "125.00"
    assert phone.updated_since(changed.get_json()["lastUpdated"]).status_code == 204

    assert phone.unregister().status_code == 200
    assert phone.updated_since().status_code == 204
    assert phone.unregister().status_code == 200  # gone already: still 200

    logged = wallet_client.post(f"{phone.base}/log", json={"logs": ["Web service error: 500"]})
    assert logged.status_code == 200


def test_only_the_pass_s_own_token_authorizes_it(wallet_client, tenant, other_tenant, db):
    mine = Phone.adding(wallet_client, make_customer(db, tenant.company_id))
    theirs = Phone.adding(wallet_client, make_customer(db, other_tenant.company_id))
    stranger = theirs.document["authenticationToken"]
    for answer in (mine.register(token=stranger), mine.unregister(token=stranger),
                   mine.latest(token=stranger), mine.register(token="x" * 43),
                   mine.register(pass_type="pass.example.other"),
                   mine.register(serial="00000000-0000-4000-8000-000000000000")):
        assert (answer.status_code, answer.get_json()["code"]) == (401, "invalid_pass_token")
    for scheme in ("Bearer", "applepass-x", ""):
        answer = wallet_client.get(f"{mine.base}/passes/{PASS_TYPE_ID}/{mine.serial}",
                                   headers={"Authorization": f"{scheme} {mine.document['authenticationToken']}"})
        assert answer.status_code == 401
    assert db.query(WalletRegistration).count() == 0


def test_path_values_and_bodies_are_bounded(wallet_client, tenant, db):
    phone = Phone.adding(wallet_client, make_customer(db, tenant.company_id))
    assert phone.register(device="d" * 129).status_code == 404
    assert phone.register(serial="s" * 129).status_code == 404
    assert phone.register(device="d" * 128).status_code == 201
    for body in ({"pushToken": "p" * 201}, {"pushToken": ""}, {"pushToken": 7}, {}, ["x"]):
        answer = wallet_client.post(phone.registration(device="e"), json=body,
                                    headers=phone.auth())
        assert (answer.status_code, answer.get_json()["code"]) == (400, "invalid_passkit_request")
    answer = wallet_client.post(phone.registration(device="e"), data=b"{not json",
                                headers={**phone.auth(), "Content-Type": "application/json"})
    assert answer.status_code == 400
    for logs in ({"logs": "one"}, {"logs": ["x"] * 101}, {"logs": [1]}):
        assert wallet_client.post(f"{phone.base}/log", json=logs).status_code == 400
    too_big = wallet_client.post(f"{phone.base}/log", json={"logs": ["x" * 70_000]})
    assert too_big.status_code == 413


def test_a_pass_keeps_its_ten_latest_devices(wallet_client, tenant, db):
    customer = make_customer(db, tenant.company_id)
    phone = Phone.adding(wallet_client, customer)
    for number in range(12):
        assert phone.register(device=f"device-{number:02}").status_code == 201
    devices = sorted(row.device_library_id for row in db.query(WalletRegistration))
    assert devices == [f"device-{number:02}" for number in range(2, 12)]


def test_without_a_certificate_no_pass_is_authorized_and_no_device_has_passes(client, tenant, db):
    """No pass was issued with this service's address, so nothing can be asked of it: a 401 or
    a 204 as Apple's reference has them, never a server error."""
    customer = make_customer(db, tenant.company_id)
    token = {"Authorization": "ApplePass " + "x" * 43}
    fetched = client.get(f"/passkit/v1/passes/{PASS_TYPE_ID}/{customer.id}", headers=token)
    assert (fetched.status_code, fetched.get_json()["code"]) == (401, "invalid_pass_token")
    registered = client.post(f"/passkit/v1/devices/d1/registrations/{PASS_TYPE_ID}/{customer.id}",
                             headers=token, json={"pushToken": "abc"})
    assert registered.status_code == 401
    assert client.get(f"/passkit/v1/devices/d1/registrations/{PASS_TYPE_ID}").status_code == 204
