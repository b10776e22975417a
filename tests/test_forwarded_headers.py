"""Behind a proxy (docs/api.md#limits): the client's address and the scheme come from
X-Forwarded-For / X-Forwarded-Proto only when the peer is in FORWARDED_ALLOW_IPS. Through the
Procfile's web line, whose log says what it believed."""
from __future__ import annotations

import json
import urllib.request

import pytest

from app.web.proxies import client_address
from tests.test_procfile_web import web  # noqa: F401  (the fixture)

FORGED = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}


def _logged_request(base: str, log) -> dict:
    request = urllib.request.Request(f"{base}/ready", headers=FORGED)
    urllib.request.urlopen(request, timeout=30).close()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("message") == "request"][-1]


@pytest.mark.parametrize("web, client, scheme", [
    # 127.0.0.1, the test's own address, is no proxy of ours: what it says is not believed.
    ({"FORWARDED_ALLOW_IPS": "192.0.2.1"}, "127.0.0.1", "http"),
    ({"FORWARDED_ALLOW_IPS": "127.0.0.1,::1"}, "203.0.113.9", "https"),
], indirect=["web"])
def test_only_a_trusted_proxy_says_who_the_client_is_and_its_scheme(web, client, scheme):  # noqa: F811
    base, log, _ = web
    line = _logged_request(base, log)
    assert (line["client"], line["scheme"]) == (client, scheme)


@pytest.mark.parametrize("forwarded_for, expected", [
    (None, "10.0.0.5"),
    ("198.51.100.7", "198.51.100.7"),
    # A client's own X-Forwarded-For comes first; the proxies append what they saw.
    ("1.2.3.4, 198.51.100.7", "198.51.100.7"),
    ("1.2.3.4, 198.51.100.7, 10.0.0.9", "198.51.100.7"),
    ("10.0.0.9", "10.0.0.9"),
])
def test_the_client_is_the_nearest_address_our_proxies_did_not_add(forwarded_for, expected):
    assert client_address("10.0.0.5", forwarded_for, "10.0.0.0/24") == expected


def test_forwarded_for_from_an_untrusted_peer_is_ignored():
    assert client_address("198.51.100.1", "203.0.113.9", "10.0.0.0/24") == "198.51.100.1"
    assert client_address("198.51.100.1", "203.0.113.9", "*") == "203.0.113.9"
