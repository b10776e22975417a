"""Apple Wallet store cards (.pkpass): pass.json, icons, manifest and detached signature."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
import zlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.serialization import pkcs7

MAX_LOCATIONS = 10  # Wallet ignores any location beyond the tenth
ICON_SIZES = {"icon.png": 29, "icon@2x.png": 58}
ICON_RGB = (0x1F, 0x4E, 0x79)


@dataclass(frozen=True)
class WebService:
    """Where a pass asks for its updates, and the token it authenticates with there."""

    url: str
    authentication_token: str


@dataclass
class PassSigner:
    certificate_pem: bytes
    key_pem: bytes
    wwdr_pem: bytes
    pass_type_id: str
    team_id: str

    @classmethod
    def from_files(cls, cert_file, key_file, wwdr_file, pass_type_id, team_id) -> PassSigner:
        return cls(
            certificate_pem=Path(cert_file).read_bytes(),
            key_pem=Path(key_file).read_bytes(),
            wwdr_pem=Path(wwdr_file).read_bytes(),
            pass_type_id=pass_type_id,
            team_id=team_id,
        )

    @cached_property
    def _loaded(self):
        # Loading an RSA key checks it, which costs about a quarter of a second: once per signer.
        return (x509.load_pem_x509_certificate(self.certificate_pem),
                serialization.load_pem_private_key(self.key_pem, password=None),
                x509.load_pem_x509_certificate(self.wwdr_pem))

    def sign(self, manifest: bytes) -> bytes:
        """A detached PKCS#7 (DER) signature of the manifest, carrying the WWDR certificate."""
        certificate, key, wwdr = self._loaded
        return (
            pkcs7.PKCS7SignatureBuilder()
            .set_data(manifest)
            .add_signer(certificate, key, hashes.SHA256())
            .add_certificate(wwdr)
            .sign(
                serialization.Encoding.DER,
                [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Binary],
            )
        )


def build_pass(
    signer: PassSigner,
    *,
    serial_number: str,
    organization_name: str,
    description: str,
    card_number: str,
    balance_text: str,
    pending_text: str | None,
    locations: list[dict],
    relevant_text: str | None,
    web_service: WebService | None = None,
    member_name: str | None = None,
    tier_name: str | None = None,
) -> bytes:
    """The .pkpass archive (zip bytes) of a loyalty store card.

    Each location is a dict with ``latitude`` and ``longitude`` (entries without
    both are skipped) and optionally its own ``relevantText``, which otherwise
    defaults to ``relevant_text``. With ``web_service`` the pass asks that service for its
    updates (docs/api.md#wallet). The member's name and tier, when given, are its auxiliary fields.
    """
    secondary = [{"key": "cardNumber", "label": "Card number", "value": card_number}]
    if pending_text is not None:
        secondary.append({"key": "pending", "label": "Pending", "value": pending_text})
    document = {
        "formatVersion": 1,
        "passTypeIdentifier": signer.pass_type_id,
        "teamIdentifier": signer.team_id,
        "serialNumber": serial_number,
        "organizationName": organization_name,
        "description": description,
        "storeCard": {
            "primaryFields": [{"key": "balance", "label": "Balance", "value": balance_text}],
            "secondaryFields": secondary,
        },
        "barcodes": [
            {
                "format": "PKBarcodeFormatQR",
                "message": card_number,
                "messageEncoding": "iso-8859-1",
                "altText": card_number,
            }
        ],
    }
    auxiliary = [{"key": key, "label": label, "value": value}
                 for key, label, value in (("member", "Member", member_name),
                                           ("tier", "Tier", tier_name)) if value]
    if auxiliary:
        document["storeCard"]["auxiliaryFields"] = auxiliary
    if web_service is not None:
        document["webServiceURL"] = web_service.url
        document["authenticationToken"] = web_service.authentication_token
    geotags = _pass_locations(locations, relevant_text)
    if geotags:
        document["locations"] = geotags
    return _signed_archive(signer, document)


def _signed_archive(signer: PassSigner, document: dict) -> bytes:
    """pass.json, the icons, the manifest of their digests and its signature, zipped."""
    files = {"pass.json": json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8")}
    for name, size in ICON_SIZES.items():
        files[name] = solid_png(size, size, ICON_RGB)
    manifest = json.dumps(
        {name: hashlib.sha1(content).hexdigest() for name, content in files.items()},
        indent=2,
        sort_keys=True,
    ).encode("utf-8")
    files["manifest.json"] = manifest
    files["signature"] = signer.sign(manifest)

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def _pass_locations(locations: list[dict], relevant_text: str | None) -> list[dict]:
    geotags = []
    for location in locations:
        latitude, longitude = location.get("latitude"), location.get("longitude")
        if latitude is None or longitude is None:
            continue
        geotag = {"latitude": float(latitude), "longitude": float(longitude)}
        text = location.get("relevantText") or relevant_text
        if text:
            geotag["relevantText"] = text
        geotags.append(geotag)
        if len(geotags) == MAX_LOCATIONS:
            break
    return geotags


def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A single-colour 8-bit RGB PNG."""
    row = b"\x00" + bytes(rgb) * width  # filter type 0 (None) before each scanline
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(row * height, 9))
        + _png_chunk(b"IEND", b"")
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )
