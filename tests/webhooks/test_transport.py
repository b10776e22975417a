import json
import random
import socket
import time

import pytest
from standardwebhooks.webhooks import Webhook

from app.services.webhook_signing import new_endpoint_secret, signature_headers
from app.services.webhook_transport import (
    ADDRESS_NOT_ALLOWED,
    DeliveryOutcome,
    is_public_address,
    next_delay,
    post_event,
    retry_delays,
)

DEFAULT_SCHEDULE = "5,300,1800,7200,18000,36000,36000"
BODY = b'{"type":"customer.created","timestamp":"2024-05-01T10:00:00Z","data":{"id":"c_1"}}'


def _resolve_to_loopback(monkeypatch, *names: str) -> list[str]:
    """Make ``names`` resolve to 127.0.0.1, as a hostile DNS answer would; returns the lookups."""
    real_getaddrinfo = socket.getaddrinfo
    lookups: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host in names:
            lookups.append(host)
            address = ("127.0.0.1", port)
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)]
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


def _eventually(condition, within: float = 3.0) -> bool:
    """Poll ``condition``: the receiver's accept loop runs in its own thread."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _deliver(receiver, path: str, *, host: str = "127.0.0.1", headers=None, **options):
    """POST ``BODY`` to the test receiver, trusting its CA and, unless told, private addresses."""
    options.setdefault("allow_private", True)
    options.setdefault("ca_bundle", receiver.ca_bundle)
    return post_event(receiver.url(path, host=host), BODY, headers or {}, **options)


# --- delivery to a real HTTPS receiver -------------------------------------------------


def test_signed_delivery_arrives_intact_and_verifies(receiver):
    secret = new_endpoint_secret()
    headers = signature_headers(secret, "evt_1", int(time.time()), BODY)

    outcome = _deliver(receiver, "/ok", headers=headers)

    assert outcome == DeliveryOutcome(status=204, retry_after=None, error=None)
    assert outcome.delivered and not outcome.gone
    [hit] = receiver.hits
    assert hit.body == BODY
    assert hit.headers["Content-Type"] == "application/json"
    assert hit.headers["webhook-id"] == "evt_1"
    assert Webhook(secret).verify(hit.body, hit.headers) == json.loads(BODY)


def test_private_address_is_refused_before_any_request(receiver):
    refused = _deliver(receiver, "/ok", allow_private=False)

    assert refused == DeliveryOutcome(status=None, retry_after=None, error=ADDRESS_NOT_ALLOWED)
    assert receiver.hits == []
    # The same receiver is up and reachable once private addresses are allowed.
    assert _deliver(receiver, "/ok").delivered
    assert [hit.path for hit in receiver.hits] == ["/ok"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "hooks.example.test"])
def test_an_internal_host_is_not_even_connected_to(monkeypatch, host):
    """Checked on the resolved address before connecting: a listener that never accepts has
    no connection waiting in its queue afterwards (the kernel completes a handshake before
    connect() returns, so one made would be there)."""
    _resolve_to_loopback(monkeypatch, "hooks.example.test")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        url = f"https://{host}:{listener.getsockname()[1]}/hook"
        assert post_event(url, BODY, {}, timeout=1).error == ADDRESS_NOT_ALLOWED
        with pytest.raises(BlockingIOError):
            listener.accept()
        # Allowed, the same delivery does connect: the check above can see a connection.
        assert post_event(url, BODY, {}, timeout=0.2, allow_private=True).status is None
        listener.setblocking(True)
        listener.accept()[0].close()


def test_hostname_is_judged_by_the_address_it_connects_to(receiver):
    outcome = _deliver(receiver, "/ok", host="localhost", allow_private=False)

    assert outcome.error == ADDRESS_NOT_ALLOWED
    assert receiver.hits == []


def test_name_rebound_to_loopback_is_refused(receiver, monkeypatch):
    lookups = _resolve_to_loopback(monkeypatch, "hooks.example.test")

    refused = _deliver(receiver, "/ok", host="hooks.example.test", allow_private=False)

    assert refused.error == ADDRESS_NOT_ALLOWED
    assert receiver.hits == []
    # One lookup, made by the connection itself: no earlier answer for a rebinding
    # DNS server to make differ from the address actually used.
    assert lookups == ["hooks.example.test"]
    # Allowed, the same name connects and its certificate is checked against that name.
    assert _deliver(receiver, "/ok", host="hooks.example.test").delivered
    assert len(receiver.hits) == 1


def test_certificate_must_match_the_url_host(receiver, monkeypatch):
    _resolve_to_loopback(monkeypatch, "other.example.test")

    outcome = _deliver(receiver, "/ok", host="other.example.test")

    assert outcome.status is None
    assert outcome.error and outcome.error != ADDRESS_NOT_ALLOWED
    assert receiver.hits == []


def test_without_a_ca_bundle_the_system_trust_store_rejects_the_test_ca(receiver):
    outcome = _deliver(receiver, "/ok", ca_bundle=None)

    assert outcome.status is None
    assert "certificate" in outcome.error.lower()
    assert receiver.hits == []


def test_server_error_is_a_failure_without_retry_after(receiver):
    outcome = _deliver(receiver, "/error")

    assert outcome == DeliveryOutcome(status=500, retry_after=None, error=None)
    assert not outcome.delivered and not outcome.gone


def test_410_means_gone(receiver):
    outcome = _deliver(receiver, "/gone")

    assert outcome.status == 410
    assert outcome.gone and not outcome.delivered


def test_429_retry_after_seconds(receiver):
    outcome = _deliver(receiver, "/busy")

    assert outcome == DeliveryOutcome(status=429, retry_after=120.0, error=None)


def test_503_retry_after_http_date(receiver):
    outcome = _deliver(receiver, "/unavailable")

    assert outcome.status == 503
    assert receiver.unavailable_for - 5 <= outcome.retry_after <= receiver.unavailable_for


def test_redirect_is_a_failure_and_not_followed(receiver):
    outcome = _deliver(receiver, "/redirect")

    assert outcome.status == 302
    assert not outcome.delivered
    assert [hit.path for hit in receiver.hits] == ["/redirect"]


def test_slow_receiver_times_out(receiver):
    started = time.monotonic()

    outcome = _deliver(receiver, "/slow", timeout=0.5)

    assert time.monotonic() - started < 5
    assert outcome.status is None
    assert "timed out" in outcome.error
    assert not outcome.delivered


def test_refused_connection_is_an_error_outcome():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now.

    outcome = post_event(f"https://127.0.0.1:{port}/", BODY, {}, allow_private=True)

    assert outcome.status is None
    assert outcome.error and outcome.error != ADDRESS_NOT_ALLOWED


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "HTTP://hooks.example.test/",
        "ftp://hooks.example.test/",
        "https:///nohost",
    ],
)
def test_only_https_urls_are_sent(receiver, url):
    # The plain-http url on the receiver's own port proves nothing is sent there.
    url = url.replace("127.0.0.1", f"127.0.0.1:{receiver.port}")

    outcome = post_event(url, BODY, {}, allow_private=True)

    assert outcome.status is None
    assert "https" in outcome.error
    assert not _eventually(lambda: receiver.server.connections > 0, within=0.2)


def test_malformed_url_is_an_error_outcome():
    outcome = post_event("https://[::1/hook", BODY, {}, allow_private=True)

    assert outcome.status is None
    assert outcome.error == "invalid url"


# --- which addresses count as public ----------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fe80::1%1",
        "fc00::1",
        "fd12:3456::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        # IPv4 inside IPv6: 6to4, NAT64 (well-known and local prefixes), Teredo, IPv4-compatible.
        "2002:7f00:1::",
        "2002:a9fe:a9fe::1",
        "2002:c0a8:101::",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a00:1",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "::127.0.0.1",
    ],
)
def test_internal_addresses_are_not_public(address):
    assert not is_public_address(address)


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
                "2002:808:808::1", "64:ff9b::808:808"]
)
def test_internet_addresses_are_public(address):
    assert is_public_address(address)


# --- the retry timetable ---------------------------------------------------------------


class _FixedRandom(random.Random):
    """A generator whose every draw is ``value``, to reach the ends of the jitter range."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def test_default_schedule_is_seven_retries():
    assert retry_delays(DEFAULT_SCHEDULE) == [5, 300, 1800, 7200, 18000, 36000, 36000]


def test_schedule_tolerates_spaces_and_fractions():
    assert retry_delays(" 1.5, 10 ,0") == [1.5, 10.0, 0.0]


@pytest.mark.parametrize(
    "text", ["", " ", "5,,10", "5,", "5;10", "five", "-5", "nan", "inf", "5,1e999"]
)
def test_bad_schedule_is_rejected(text):
    with pytest.raises(ValueError):
        retry_delays(text)


def test_every_scheduled_retry_then_dead_letter():
    delays = retry_delays(DEFAULT_SCHEDULE)
    rand = random.Random(7)

    waits = [next_delay(index, delays, None, rand) for index in range(len(delays) + 1)]

    # N numbers give N retries after the first attempt, so N + 1 attempts.
    assert all(wait is not None for wait in waits[:-1])
    assert waits[-1] is None
    assert next_delay(len(delays) + 5, delays, None, rand) is None
    for wait, delay in zip(waits, delays):
        assert 0.9 * delay <= wait <= 1.1 * delay


def test_jitter_spans_ten_percent_each_way():
    rand = random.Random(42)

    waits = [next_delay(0, [300.0], None, rand) for _ in range(2000)]

    assert min(waits) >= 270.0 and max(waits) <= 330.0
    assert min(waits) < 276.0 and max(waits) > 324.0
    assert next_delay(0, [300.0], None, _FixedRandom(0.0)) == pytest.approx(270.0)
    assert next_delay(0, [300.0], None, _FixedRandom(0.999999)) == pytest.approx(330.0, abs=0.01)


def test_default_generator_is_used_when_none_given():
    waits = {next_delay(0, [100.0], None) for _ in range(50)}

    assert all(90.0 <= wait <= 110.0 for wait in waits)
    assert len(waits) > 1


def test_larger_retry_after_wins():
    assert next_delay(0, [5.0], 120.0, random.Random(1)) == 120.0


def test_smaller_retry_after_leaves_the_schedule():
    wait = next_delay(2, [5.0, 300.0, 1800.0], 10.0, random.Random(1))

    assert 1620.0 <= wait <= 1980.0


def test_retry_after_does_not_extend_the_schedule():
    assert next_delay(1, [5.0], 120.0) is None


def test_negative_attempt_index_is_rejected():
    with pytest.raises(ValueError):
        next_delay(-1, [5.0], None)
