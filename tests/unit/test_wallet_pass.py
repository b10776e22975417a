import datetime as dt
import hashlib
import io
import json
import shutil
import struct
import subprocess
import zipfile
import zlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

from app.services.cards import wallet_pass
from app.services.cards.wallet_pass import PassSigner, build_pass, solid_png

PASS_TYPE_ID = "pass.com.example.loyalty"
TEAM_ID = "ABCDE12345"
OPENSSL = shutil.which("openssl")
needs_openssl = pytest.mark.skipif(OPENSSL is None, reason="openssl is not on PATH")


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, issuer, public_key, issuer_key, *, ca):
    now = dt.datetime.now(dt.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=not ca, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(issuer_key, hashes.SHA256())
    )


def _authority(common_name):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key, _certificate(common_name, common_name, key.public_key(), key, ca=True)


def _pem(certificate):
    return certificate.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def wwdr():
    return _authority("Test WWDR Authority")


@pytest.fixture(scope="module")
def signer(wwdr):
    ca_key, ca_cert = wwdr
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = _certificate(f"Pass Type ID: {PASS_TYPE_ID}", "Test WWDR Authority",
                        key.public_key(), ca_key, ca=False)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return PassSigner(
        certificate_pem=_pem(cert), key_pem=key_pem, wwdr_pem=_pem(ca_cert),
        pass_type_id=PASS_TYPE_ID, team_id=TEAM_ID,
    )


def _store(i):
    return {"latitude": 59.43 + i / 1000, "longitude": 24.75 + i / 1000}


def _build(signer, **overrides):
    arguments = dict(
        serial_number="card-42",
        organization_name="Kohvik OÜ",
        description="Kohvik loyalty card",
        card_number="2123456789010",
        balance_text="12.50 points",
        pending_text="3.00 points",
        locations=[_store(1), _store(2)],
        relevant_text="Your card is ready",
    )
    arguments.update(overrides)
    return build_pass(signer, **arguments)


def _unzip(pkpass):
    with zipfile.ZipFile(io.BytesIO(pkpass)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _openssl_verify(tmp_path, files, ca_pem):
    (tmp_path / "manifest.json").write_bytes(files["manifest.json"])
    (tmp_path / "signature").write_bytes(files["signature"])
    (tmp_path / "ca.pem").write_bytes(ca_pem)
    return subprocess.run(
        [OPENSSL, "smime", "-verify", "-inform", "DER", "-binary",
         "-in", str(tmp_path / "signature"), "-content", str(tmp_path / "manifest.json"),
         "-CAfile", str(tmp_path / "ca.pem"), "-purpose", "any", "-out", "/dev/null"],
        capture_output=True, text=True,
    )


def test_pass_holds_exactly_the_expected_files(signer):
    files = _unzip(_build(signer))
    assert set(files) == {"pass.json", "icon.png", "icon@2x.png", "manifest.json", "signature"}


def test_manifest_hashes_every_other_file_and_nothing_else(signer):
    files = _unzip(_build(signer))
    manifest = json.loads(files["manifest.json"])
    others = {name for name in files if name not in ("manifest.json", "signature")}
    assert set(manifest) == others
    for name in others:
        assert manifest[name] == hashlib.sha1(files[name]).hexdigest()


def test_pass_json_describes_the_store_card(signer):
    document = json.loads(_unzip(_build(signer))["pass.json"])
    assert document["formatVersion"] == 1
    assert document["passTypeIdentifier"] == PASS_TYPE_ID
    assert document["teamIdentifier"] == TEAM_ID
    assert document["serialNumber"] == "card-42"
    assert document["organizationName"] == "Kohvik OÜ"
    assert document["description"] == "Kohvik loyalty card"
    card = document["storeCard"]
    assert card["primaryFields"] == [
        {"key": "balance", "label": "Balance", "value": "12.50 points"}
    ]
    assert {f["key"]: f["value"] for f in card["secondaryFields"]} == {
        "cardNumber": "2123456789010",
        "pending": "3.00 points",
    }
    assert document["barcodes"] == [{
        "format": "PKBarcodeFormatQR",
        "message": "2123456789010",
        "messageEncoding": "iso-8859-1",
        "altText": "2123456789010",
    }]
    assert document["locations"] == [
        {"latitude": 59.431, "longitude": 24.751, "relevantText": "Your card is ready"},
        {"latitude": 59.432, "longitude": 24.752, "relevantText": "Your card is ready"},
    ]


def test_pending_field_is_left_out_when_not_given(signer):
    document = json.loads(_unzip(_build(signer, pending_text=None))["pass.json"])
    assert [f["key"] for f in document["storeCard"]["secondaryFields"]] == ["cardNumber"]


def test_member_and_tier_are_auxiliary_fields_each_left_out_when_not_given(signer):
    card = json.loads(_unzip(_build(signer, member_name="Anna Ivanova", tier_name="Gold"))
                      ["pass.json"])["storeCard"]
    assert card["auxiliaryFields"] == [{"key": "member", "label": "Member", "value": "Anna Ivanova"},
                                       {"key": "tier", "label": "Tier", "value": "Gold"}]
    card = json.loads(_unzip(_build(signer, member_name="Anna"))["pass.json"])["storeCard"]
    assert [field["key"] for field in card["auxiliaryFields"]] == ["member"]
    assert "auxiliaryFields" not in json.loads(_unzip(_build(signer))["pass.json"])["storeCard"]


def test_locations_are_capped_at_ten_in_the_given_order(signer):
    stores = [_store(i) for i in range(15)]
    document = json.loads(_unzip(_build(signer, locations=stores))["pass.json"])
    assert [(g["latitude"], g["longitude"]) for g in document["locations"]] == [
        (s["latitude"], s["longitude"]) for s in stores[:10]
    ]


def test_locations_key_is_omitted_without_locations(signer):
    document = json.loads(_unzip(_build(signer, locations=[]))["pass.json"])
    assert "locations" not in document


def test_locations_without_coordinates_are_skipped(signer):
    stores = [{"latitude": None, "longitude": 24.7}, {"latitude": 59.4}]
    document = json.loads(_unzip(_build(signer, locations=stores))["pass.json"])
    assert "locations" not in document


def test_location_keeps_its_own_relevant_text_and_none_is_omitted(signer):
    stores = [{**_store(1), "relevantText": "Old Town café"}, _store(2)]
    document = json.loads(_unzip(_build(signer, locations=stores, relevant_text=None))["pass.json"])
    assert document["locations"][0]["relevantText"] == "Old Town café"
    assert "relevantText" not in document["locations"][1]


def test_a_web_service_names_its_url_and_token_in_the_pass(signer):
    service = wallet_pass.WebService(url="https://cards.example.com/passkit",
                                     authentication_token="t" * 43)
    document = json.loads(_unzip(_build(signer, web_service=service))["pass.json"])
    assert (document["webServiceURL"], document["authenticationToken"]) == (service.url, "t" * 43)
    assert "webServiceURL" not in json.loads(_unzip(_build(signer))["pass.json"])


def test_icons_are_valid_pngs_of_the_wallet_sizes(signer):
    files = _unzip(_build(signer))
    for name, size in {"icon.png": 29, "icon@2x.png": 58}.items():
        assert _png_size(files[name]) == (size, size)


def test_tampering_with_pass_json_breaks_the_manifest_hash(signer):
    files = _unzip(_build(signer))
    manifest = json.loads(files["manifest.json"])
    assert hashlib.sha1(files["pass.json"]).hexdigest() == manifest["pass.json"]
    tampered = files["pass.json"].replace(b'"12.50 points"', b'"99.50 points"')
    assert tampered != files["pass.json"]
    assert hashlib.sha1(tampered).hexdigest() != manifest["pass.json"]


def test_signature_carries_the_pass_and_wwdr_certificates(signer):
    files = _unzip(_build(signer))
    certificates = pkcs7.load_der_pkcs7_certificates(files["signature"])
    subjects = {c.subject for c in certificates}
    assert x509.load_pem_x509_certificate(signer.certificate_pem).subject in subjects
    assert x509.load_pem_x509_certificate(signer.wwdr_pem).subject in subjects


@needs_openssl
def test_signature_verifies_against_the_manifest_with_the_wwdr_ca(signer, tmp_path):
    files = _unzip(_build(signer))
    result = _openssl_verify(tmp_path, files, signer.wwdr_pem)
    assert result.returncode == 0, result.stderr
    assert "Verification successful" in result.stderr


@needs_openssl
def test_signature_is_detached_and_uses_sha256(signer, tmp_path):
    files = _unzip(_build(signer))
    (tmp_path / "signature").write_bytes(files["signature"])
    dump = subprocess.run(
        [OPENSSL, "cms", "-cmsout", "-print", "-inform", "DER", "-in", str(tmp_path / "signature")],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "eContent: <ABSENT>" in dump
    assert "sha256" in dump


@needs_openssl
def test_signature_fails_for_a_tampered_manifest(signer, tmp_path):
    files = _unzip(_build(signer))
    files["manifest.json"] = files["manifest.json"].replace(b"{", b"{ ", 1)
    result = _openssl_verify(tmp_path, files, signer.wwdr_pem)
    assert result.returncode != 0


@needs_openssl
def test_signature_fails_against_another_ca(signer, tmp_path):
    files = _unzip(_build(signer))
    _, other_ca = _authority("Another Authority")
    result = _openssl_verify(tmp_path, files, _pem(other_ca))
    assert result.returncode != 0


def test_signer_reads_its_files(signer, tmp_path):
    (tmp_path / "cert.pem").write_bytes(signer.certificate_pem)
    (tmp_path / "key.pem").write_bytes(signer.key_pem)
    (tmp_path / "wwdr.pem").write_bytes(signer.wwdr_pem)
    loaded = PassSigner.from_files(
        tmp_path / "cert.pem", str(tmp_path / "key.pem"), tmp_path / "wwdr.pem",
        PASS_TYPE_ID, TEAM_ID,
    )
    assert loaded == signer


def _png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks = 8, {}
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length : position + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks.setdefault(kind, b"")
        chunks[kind] += body
        position += 12 + length
    assert list(chunks)[0] == b"IHDR" and list(chunks)[-1] == b"IEND"
    width, height, depth, colour, *_ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour) == (8, 2)
    pixels = zlib.decompress(chunks[b"IDAT"])
    assert len(pixels) == height * (1 + 3 * width)
    return width, height


def test_solid_png_rows_hold_the_colour():
    data = solid_png(3, 2, (1, 2, 3))
    assert _png_size(data) == (3, 2)
