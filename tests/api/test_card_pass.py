"""The customer's card as an Apple Wallet pass (docs/api.md#cards), signed with a test certificate
made here, and verified the way a phone would: manifest hashes, then the detached signature."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import random
import shutil
import subprocess
import zipfile

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, pkcs7
from sqlalchemy import select

from app import create_app
from app.models import Store
from testbed.cards import (PASS_TYPE_ID, TEAM_ID, make_customer, make_pass_certificates,
                           make_store, wallet_app)

OPENSSL = shutil.which("openssl")
PKPASS = "application/vnd.apple.pkpass"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return make_pass_certificates(tmp_path_factory.mktemp("wallet"))


@pytest.fixture
def wallet_client(settings, certificates):
    app = wallet_app(settings, certificates)
    yield app.test_client()
    app.extensions["engine"].dispose()


def download(client, customer):
    response = client.get(f"/cards/{customer.card_token}.pkpass")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == PKPASS
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def openssl_verify(folder, files, ca_pem: bytes):
    (folder / "manifest.json").write_bytes(files["manifest.json"])
    (folder / "signature").write_bytes(files["signature"])
    (folder / "ca.pem").write_bytes(ca_pem)
    return subprocess.run(
        [OPENSSL, "smime", "-verify", "-inform", "DER", "-binary", "-in", str(folder / "signature"),
         "-content", str(folder / "manifest.json"), "-CAfile", str(folder / "ca.pem"),
         "-purpose", "any", "-out", "/dev/null"],
        capture_output=True, text=True)


def test_without_a_certificate_the_pass_is_503_wallet_not_configured(client, tenant, db):
    customer = make_customer(db, tenant.company_id)
    response = client.get(f"/cards/{customer.card_token}.pkpass")
    assert response.status_code == 503
    assert response.get_json() == {
        "detail": "Apple Wallet passes are not configured on this server",
        "code": "wallet_not_configured"}


WALLET_SETTINGS = ["cert_file", "key_file", "wwdr_file", "pass_type_id", "team_id"]


@pytest.mark.parametrize("broken", [{name: None} for name in WALLET_SETTINGS]
                         + [{"cert_file": "/nowhere/pass.pem"}],
                         ids=WALLET_SETTINGS + ["unreadable"])
def test_every_wallet_setting_is_needed_and_its_files_readable(settings, certificates, tenant, db,
                                                               broken):
    app = create_app(dataclasses.replace(settings, wallet={**certificates.wallet, **broken}))
    try:
        customer = make_customer(db, tenant.company_id)
        response = app.test_client().get(f"/cards/{customer.card_token}.pkpass")
    finally:
        app.extensions["engine"].dispose()
    assert (response.status_code, response.get_json()["code"]) == (503, "wallet_not_configured")


def test_the_pass_is_a_signed_store_card_of_the_customer(wallet_client, tenant, db, certificates,
                                                         tmp_path):
    customer = make_customer(db, tenant.company_id, available=123450, pending=2000)
    response = wallet_client.get(f"/cards/{customer.card_token}.pkpass")
    assert response.headers["Content-Type"] == PKPASS
    assert response.headers["Content-Disposition"].startswith("attachment")
    files = download(wallet_client, customer)
    assert set(files) == {"pass.json", "icon.png", "icon@2x.png", "manifest.json", "signature"}

    # The manifest hashes every other file, and nothing else.
    manifest = json.loads(files["manifest.json"])
    assert set(manifest) == set(files) - {"manifest.json", "signature"}
    for name, digest in manifest.items():
        assert hashlib.sha1(files[name]).hexdigest() == digest

    # The detached signature is made by the configured pass certificate...
    signers = pkcs7.load_der_pkcs7_certificates(files["signature"])
    assert certificates.certificate in signers and certificates.wwdr in signers
    if OPENSSL:  # ...and verifies against the test WWDR authority, for this manifest only.
        wwdr_pem = certificates.wwdr.public_bytes(Encoding.PEM)
        verified = openssl_verify(tmp_path, files, wwdr_pem)
        assert verified.returncode == 0, verified.stderr
        tampered = {**files, "manifest.json": files["manifest.json"].replace(b"{", b"{ ", 1)}
        assert openssl_verify(tmp_path, tampered, wwdr_pem).returncode != 0

    document = json.loads(files["pass.json"])
    assert (document["passTypeIdentifier"], document["teamIdentifier"]) == (PASS_TYPE_ID, TEAM_ID)
    assert document["serialNumber"] == customer.id
    assert document["organizationName"] == "Test Shop"
    assert document["barcodes"][0]["message"] == customer.card_number
    assert document["storeCard"]["primaryFields"][0]["value"] == "1\u00a0234.50"
    secondary = {f["key"]: f["value"] for f in document["storeCard"]["secondaryFields"]}
    assert secondary == {"cardNumber": customer.card_number, "pending": "20.00"}
    assert "locations" not in document  # the company has no published store


def test_locations_are_the_first_ten_published_active_stores_by_name(wallet_client, tenant,
                                                                     other_tenant, db):
    names = [f"Shop {letter}" for letter in "ABCDEFGHIJKL"]  # 12 published, active stores
    for i, name in enumerate(random.Random(7).sample(names, len(names))):
        make_store(db, tenant.company_id, name, latitude=55.0 + i / 100, longitude=37.0 + i / 100)
    make_store(db, tenant.company_id, "Shop 0 closed", active=False, latitude=1, longitude=1)
    make_store(db, tenant.company_id, "Shop 0 unpublished", channels="", latitude=2, longitude=2)
    make_store(db, other_tenant.company_id, "Shop 0 of another company", latitude=3, longitude=3)
    customer = make_customer(db, tenant.company_id)

    document = json.loads(download(wallet_client, customer)["pass.json"])

    stores = {s.name: s for s in db.scalars(
        select(Store).where(Store.company_id == tenant.company_id))}
    expected = [{"latitude": stores[name].latitude, "longitude": stores[name].longitude,
                 "relevantText": f"{name} is nearby: your card is ready"} for name in names[:10]]
    assert document["locations"] == expected


def test_pass_of_an_unknown_token_is_404_even_when_configured(wallet_client):
    response = wallet_client.get("/cards/" + "B" * 43 + ".pkpass")
    assert response.status_code == 404
    assert response.get_json() == {"detail": "card not found", "code": "not_found"}
