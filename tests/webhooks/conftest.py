"""A real HTTPS receiver on 127.0.0.1, certified by a throwaway trustme CA."""

import ssl
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import trustme

# Names on the receiver's certificate; tests resolve the last one to 127.0.0.1 themselves.
CERT_NAMES = ("localhost", "127.0.0.1", "hooks.example.test")
UNAVAILABLE_FOR = 600


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: bytes


def _http_date(moment: float) -> str:
    return formatdate(moment, usegmt=True)


def _routes(port: int) -> dict[str, tuple[int, dict[str, str]]]:
    return {
        "/ok": (204, {}),
        "/target": (200, {}),
        "/gone": (410, {}),
        "/error": (500, {"Retry-After": "999"}),
        "/busy": (429, {"Retry-After": "120"}),
        "/unavailable": (503, {"Retry-After": _http_date(time.time() + UNAVAILABLE_FOR)}),
        "/redirect": (302, {"Location": f"https://127.0.0.1:{port}/target"}),
        "/slow": (200, {}),
    }


class _Handler(BaseHTTPRequestHandler):
    server: "_TLSReceiver"

    def setup(self) -> None:
        self.request.settimeout(10)
        self.request.do_handshake()
        super().setup()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.hits.append(Hit(self.path, dict(self.headers.items()), body))
        if self.path == "/slow":
            self.server.release.wait(10)
        routes = {**_routes(self.server.server_address[1]), **self.server.overrides}
        status, headers = routes.get(self.path, (404, {}))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class _TLSReceiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.context = context
        self.hits: list[Hit] = []
        self.connections = 0
        self.release = threading.Event()
        # Answers a test sets for a path, e.g. a receiver that recovers from its outage.
        self.overrides: dict[str, tuple[int, dict[str, str]]] = {}

    def get_request(self):
        sock, address = super().get_request()
        self.connections += 1
        # The handshake runs in the handler's thread, so a client that hangs up
        # before TLS cannot stall the accept loop.
        tls = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return tls, address

    def handle_error(self, request, client_address) -> None:
        # Refused and timed-out clients hang up mid-conversation; that is expected here.
        pass


@dataclass
class Receiver:
    server: _TLSReceiver
    ca_bundle: str
    unavailable_for: int = UNAVAILABLE_FOR

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def hits(self) -> list[Hit]:
        return self.server.hits

    def answer(self, path: str, status: int, headers: dict[str, str] | None = None) -> None:
        self.server.overrides[path] = (status, headers or {})

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"


@pytest.fixture(scope="session")
def webhook_ca(tmp_path_factory) -> tuple[trustme.CA, str]:
    ca = trustme.CA()
    bundle = tmp_path_factory.mktemp("webhook-ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return ca, str(bundle)


@pytest.fixture
def receiver(webhook_ca):
    ca, bundle = webhook_ca
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*CERT_NAMES).configure_cert(context)
    server = _TLSReceiver(context)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield Receiver(server, bundle)
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
