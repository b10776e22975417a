"""A tenant's webhook receiver: HTTPS on 127.0.0.1 with a throwaway trustme CA. It notes
every event it answered with a 2xx, when, and can keep its answers waiting (a slow
receiver), to catch a delivery in the middle."""
from __future__ import annotations

import json
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme


@dataclass
class Received:
    event_id: str
    type: str
    data: dict
    at: float  # time.time() when it arrived; noted once a 2xx has been sent for it


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def setup(self) -> None:
        self.request.settimeout(30)
        self.request.do_handshake()
        super().setup()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        arrived_at = time.time()
        with self.server.lock:
            self.server.arrivals.append(self.headers["webhook-id"])
        self.server.arrived.set()
        self.server.answering.wait(60)
        self.send_response(204)
        self.end_headers()
        self.wfile.flush()
        with self.server.lock:
            self.server.received.append(Received(self.headers["webhook-id"], body["type"],
                                                 body["data"], arrived_at))

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context: ssl.SSLContext):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.context = context
        self.received: list[Received] = []
        self.arrivals: list[str] = []  # event ids as they arrive, answered or not
        self.lock = threading.Lock()
        self.answering = threading.Event()
        self.answering.set()
        self.arrived = threading.Event()

    def get_request(self):
        sock, address = super().get_request()
        # The handshake runs in the handler's thread: a client that hangs up cannot stall accept.
        return self.context.wrap_socket(sock, server_side=True,
                                        do_handshake_on_connect=False), address

    def handle_error(self, request, client_address) -> None:
        pass  # a killed worker hangs up mid-request; that is what some scenarios do


class WebhookReceiver:
    def __init__(self, directory: Path):
        ca = trustme.CA()
        self.ca_bundle = str(directory / "webhook-ca.pem")
        ca.cert_pem.write_to_path(self.ca_bundle)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        self._server = _Server(context)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def url(self, path: str = "/hooks") -> str:
        return f"https://localhost:{self._server.server_address[1]}{path}"

    def received(self) -> list[Received]:
        with self._server.lock:
            return list(self._server.received)

    def last_arrival(self) -> str:
        with self._server.lock:
            return self._server.arrivals[-1]

    def event_ids(self) -> set[str]:
        return {r.event_id for r in self.received()}

    def of_type(self, event_type: str) -> list[Received]:
        return [r for r in self.received() if r.type == event_type]

    def hold_answers(self) -> threading.Event:
        """From now on a delivery waits until `answer_again`; returns the event set when the
        next one has arrived."""
        self._server.arrived.clear()
        self._server.answering.clear()
        return self._server.arrived

    def answer_again(self) -> None:
        self._server.answering.set()

    def wait_for(self, ids: set[str], timeout: float) -> set[str]:
        """The ids among `ids` still not received after at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (missing := ids - self.event_ids()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return missing

    def close(self) -> None:
        self.answer_again()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
