"""Customers with balances, stores and a throwaway pass certificate, for the card routes.
Customers and stores are made with the models directly, as their own API would make them."""
from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from app import create_app
from app.database.engine import utcnow
from app.models import Customer, Store
from app.services.cards import identifiers
from app.services.customers import profiles
from app.services.rewards import ledger
from app.services.unit_of_work import UnitOfWork

PASS_TYPE_ID = "pass.example.loyalty.test"
TEAM_ID = "TEAM123456"


def make_customer(db, company_id, *, first_name="Anna", available=0, pending=0, reserved=0,
                  pending_at=None) -> Customer:
    now = utcnow()
    customer = Customer(company_id=company_id, phone="+7912" + identifiers.new_card_number()[-7:],
                        first_name=first_name, card_number=identifiers.new_card_number(),
                        card_token=identifiers.new_card_token(), created_at=now)
    db.add(customer)
    db.flush()
    profiles.record_names(db, company_id, [customer.id])
    account = ledger.open_account(UnitOfWork.of(db), company_id, customer.id, now)
    if available + reserved:
        ledger.post(account, type="ADJUSTMENT", amount=available + reserved, now=now,
                    basis="opening balance")
    if pending:
        ledger.post(account, type="ACCRUAL", amount=pending, now=now, status="PENDING",
                    available_at=pending_at or now + dt.timedelta(days=14))
    if reserved:
        ledger.reserve(account, reserved, now)
    db.commit()
    return customer


def make_store(db, company_id, name, *, city="Moscow", address=None, channels="MINIAPP",
               active=True, latitude=55.75, longitude=37.61) -> Store:
    store = Store(company_id=company_id, name=name, address=address or f"{name} street, 1",
                  city=city, latitude=latitude, longitude=longitude, channels=channels,
                  active=active, created_at=utcnow())
    db.add(store)
    db.commit()
    return store


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject, issuer, public_key, issuer_key, *, ca):
    """With the key identifiers strict X.509 checking asks for (Python 3.13's default TLS
    contexts check strictly: the push service's stand-in verifies the pass certificate)."""
    now = dt.datetime.now(dt.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(days=1))
               .not_valid_after(now + dt.timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key),
                              critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   issuer_key.public_key()), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
    return builder.sign(issuer_key, hashes.SHA256())


@dataclasses.dataclass(frozen=True)
class PassCertificates:
    """A test WWDR authority and a pass certificate it issued, written as PEM files."""

    cert_file: Path
    key_file: Path
    wwdr_file: Path
    certificate: x509.Certificate
    wwdr: x509.Certificate

    @property
    def wallet(self) -> dict:
        return {"cert_file": str(self.cert_file), "key_file": str(self.key_file),
                "wwdr_file": str(self.wwdr_file), "pass_type_id": PASS_TYPE_ID, "team_id": TEAM_ID}


def make_pass_certificates(folder: Path) -> PassCertificates:
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    wwdr = _certificate("Test WWDR Authority", "Test WWDR Authority", ca_key.public_key(), ca_key,
                        ca=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    certificate = _certificate(f"Pass Type ID: {PASS_TYPE_ID}", "Test WWDR Authority",
                               key.public_key(), ca_key, ca=False)
    files = PassCertificates(folder / "pass.pem", folder / "pass.key", folder / "wwdr.pem",
                             certificate, wwdr)
    files.cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    files.key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                 serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))
    files.wwdr_file.write_bytes(wwdr.public_bytes(serialization.Encoding.PEM))
    return files


def wallet_app(settings, certificates: PassCertificates):
    """The app with the pass certificate configured, on the database the settings name."""
    return create_app(dataclasses.replace(settings, wallet=certificates.wallet))
