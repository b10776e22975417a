"""A phone's side of Apple's Wallet web service (docs/api.md#wallet): it downloads the pass, reads
its webServiceURL and token, and talks to the service as Wallet does."""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from urllib.parse import urlsplit

from testbed.cards import PASS_TYPE_ID


def pass_json(pkpass: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(pkpass)) as archive:
        return json.loads(archive.read("pass.json"))


@dataclass
class Phone:
    client: object
    device: str
    push_token: str
    document: dict  # the pass.json it holds

    @classmethod
    def adding(cls, client, customer, device="device-1", push_token="a1b2c3d4e5f6"):
        response = client.get(f"/cards/{customer.card_token}.pkpass")
        assert response.status_code == 200, response.get_data(as_text=True)
        return cls(client, device, push_token, pass_json(response.data))

    @property
    def base(self) -> str:
        return urlsplit(self.document["webServiceURL"]).path + "/v1"

    @property
    def serial(self) -> str:
        return self.document["serialNumber"]

    def auth(self, token: str | None = None) -> dict:
        return {"Authorization": f"ApplePass {token or self.document['authenticationToken']}"}

    def registration(self, serial=None, pass_type=PASS_TYPE_ID, device=None) -> str:
        return (f"{self.base}/devices/{device or self.device}/registrations/{pass_type}/"
                f"{serial or self.serial}")

    def register(self, **path):
        token = path.pop("token", None)
        return self.client.post(self.registration(**path), json={"pushToken": self.push_token},
                                headers=self.auth(token))

    def unregister(self, **path):
        token = path.pop("token", None)
        return self.client.delete(self.registration(**path), headers=self.auth(token))

    def updated_since(self, tag=None):
        query = f"?passesUpdatedSince={tag}" if tag else ""
        return self.client.get(f"{self.base}/devices/{self.device}/registrations/{PASS_TYPE_ID}"
                               f"{query}")

    def latest(self, if_modified_since=None, token=None):
        headers = self.auth(token)
        if if_modified_since:
            headers["If-Modified-Since"] = if_modified_since
        return self.client.get(f"{self.base}/passes/{PASS_TYPE_ID}/{self.serial}", headers=headers)
