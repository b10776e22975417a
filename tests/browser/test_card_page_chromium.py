"""The card page in a real headless Chromium at 360×740: the shopper's phone, more or less.

The app is served on 127.0.0.1 by a real HTTP server in a thread. Chromium can resolve no
host name but 127.0.0.1 (--host-resolver-rules), and its own network log (--log-net-log)
is read afterwards to prove that every TCP connection it opened, and every UDP datagram it
sent, went to 127.0.0.1, and that every request of the page was for our server. (Chromium
also tries its own services at start-up; those fail on name resolution and never connect,
which the log shows too.) The screenshot is kept in test-artifacts/.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from testbed.cards import make_customer, make_pass_certificates, make_store, wallet_app
from tests.conftest import IN_CI

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WIDTH, HEIGHT = 360, 740
SVG_NAMESPACE = "http://www.w3.org/2000/svg"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        message = "Debian's chromium is not installed (.ci/run installs it)"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture
def served(settings, tmp_path):
    """The app (with a pass certificate, so the wallet link shows) on a real server."""
    app = wallet_app(settings, make_pass_certificates(tmp_path))
    server, thread = serve(app)
    yield f"http://127.0.0.1:{server.server_port}"
    stop(server, thread)
    app.extensions["engine"].dispose()


def run_chromium(chromium, folder: Path, name: str, *arguments: str):
    """Chromium once, with a fresh profile; returns the finished process and its network log."""
    net_log = folder / f"{name}.netlog.json"
    process = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", "--hide-scrollbars", "--accept-lang=en-US",
         f"--user-data-dir={folder / (name + '-profile')}", f"--window-size={WIDTH},{HEIGHT}",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
         f"--log-net-log={net_log}", *arguments],
        capture_output=True, text=True, timeout=120)
    return process, NetworkLog(net_log)


class NetworkLog:
    """What Chromium's own network log says it connected to and requested."""

    def __init__(self, path: Path):
        log = json.loads(path.read_text())
        names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
        self.tcp_connects: list[str] = []
        self.udp_sent_to: list[str] = []
        self.requests: dict[int, dict] = {}
        udp_peer: dict[int, str] = {}
        for event in log["events"]:
            name, params = names[event["type"]], event.get("params", {})
            source = event["source"]["id"]
            if name == "TCP_CONNECT_ATTEMPT" and "address" in params:
                self.tcp_connects.append(params["address"])
            elif name == "UDP_CONNECT" and "address" in params:
                udp_peer[source] = params["address"]
            elif name == "UDP_BYTES_SENT":
                self.udp_sent_to.append(params.get("address") or udp_peer.get(source, "?"))
            elif name == "REQUEST_ALIVE" and "url" in params:
                self.requests[source] = {"url": params["url"], "site": None}
            elif name == "URL_REQUEST_START_JOB" and "network_isolation_key" in params:
                self.requests.setdefault(source, {"url": params.get("url")})["site"] = \
                    params["network_isolation_key"]

    def requests_of_site(self, site: str) -> list[str]:
        return [r["url"] for r in self.requests.values() if r["site"] and site in r["site"]]


def is_loopback(address: str) -> bool:
    return address.startswith("127.0.0.1:")


def visible_text(dom: str) -> str:
    dom = re.sub(r"<style.*?</style>|<svg.*?</svg>", " ", dom, flags=re.S)
    return re.sub(r"[ \t\r\n]+", " ", html.unescape(re.sub(r"<[^>]+>", " ", dom)))


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def assert_stayed_on_loopback(log: NetworkLog, origin: str, page_url: str):
    assert log.tcp_connects, "the log shows no connection at all: it cannot be read right"
    assert [a for a in log.tcp_connects if not is_loopback(a)] == []
    assert [a for a in log.udp_sent_to if not is_loopback(a)] == []
    page_requests = log.requests_of_site("http://127.0.0.1")
    assert page_url in page_requests
    assert [url for url in page_requests if not url.startswith(origin + "/")] == []


def serve(app):
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def stop(server, thread):
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_card_page_renders_in_chromium_at_360_wide_without_leaving_127_0_0_1(
        chromium, served, tenant, db, tmp_path):
    make_store(db, tenant.company_id, "Arbat", city="Moscow", address="Arbat st. 12, building 1")
    make_store(db, tenant.company_id, "Tverskaya", city="Moscow", address="Tverskaya st. 7")
    make_store(db, tenant.company_id, "Nevsky", city="Saint Petersburg", address="Nevsky pr. 28")
    customer = make_customer(db, tenant.company_id, available=123450, pending=2000, reserved=1500)
    url = f"{served}/cards/{customer.card_token}"
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "card-page-360x740.png"
    screenshot.unlink(missing_ok=True)

    dom, dom_log = run_chromium(chromium, tmp_path, "dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = visible_text(dom.stdout)
    assert customer.card_number in text
    assert "1,234.50 bonuses" in text  # English, as --accept-lang asks
    assert re.search(r"Pending 20\.00 .* Reserved 15\.00", text)
    assert "Nevsky pr. 28" in text and "Add to Apple Wallet" in text
    assert set(re.findall(r"https?://[^\s\"'<>)]+", dom.stdout)) <= {SVG_NAMESPACE}
    assert_stayed_on_loopback(dom_log, served, url)

    shot, shot_log = run_chromium(chromium, tmp_path, "shot", f"--screenshot={screenshot}", url)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert png_size(screenshot) == (WIDTH, HEIGHT)
    assert_stayed_on_loopback(shot_log, served, url)


def test_the_network_log_would_show_a_page_reaching_elsewhere(chromium, tmp_path):
    """The check above can fail: a page of ours that loads an outside image is caught."""
    def page_with_an_outside_image(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b'<!doctype html><p>outside</p><img src="http://example.com/pixel.png">']

    server, thread = serve(page_with_an_outside_image)
    origin = f"http://127.0.0.1:{server.server_port}"
    try:
        _, log = run_chromium(chromium, tmp_path, "outside", "--dump-dom", origin + "/")
    finally:
        stop(server, thread)
    assert "http://example.com/pixel.png" in log.requests_of_site("http://127.0.0.1")
    with pytest.raises(AssertionError, match="example.com"):
        assert_stayed_on_loopback(log, origin, origin + "/")
