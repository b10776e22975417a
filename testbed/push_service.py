"""A stand-in for Apple's push service (APNs), for tests and the bench only: a real HTTP/2
server over TLS (hypercorn) that requires a client certificate issued by the pass authority,
records every push and answers each as the test asks."""
from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path

import trustme
from hypercorn.asyncio import serve
from hypercorn.config import Config

from testbed.ports import free_port


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    http_version: str
    scheme: str
    topic: str | None
    body: bytes


class PushService:
    """`answers[token]`: statuses to give that device's next pushes, in order (then 200), each
    a status or (status, reason) for a refusal with APNs' JSON body `{"reason": …}`;
    `down`: every push answered 503, as an outage of the service would be."""

    def __init__(self, folder: Path, client_ca_file: Path):
        authority = trustme.CA()
        self.ca_file = folder / "apns-ca.pem"
        authority.cert_pem.write_to_path(str(self.ca_file))
        server = authority.issue_cert("127.0.0.1", "localhost")
        self.cert_file, self.key_file = folder / "apns.pem", folder / "apns.key"
        server.cert_chain_pems[0].write_to_path(str(self.cert_file))
        server.private_key_pem.write_to_path(str(self.key_file))
        self.client_ca_file = client_ca_file
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.received: list[Received] = []
        self.answers: dict[str, deque[int]] = defaultdict(deque)
        self.down = False
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def pushes_to(self, token: str) -> list[Received]:
        return [push for push in self.received if push.path == f"/3/device/{token}"]

    async def _app(self, scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {name.decode(): value.decode() for name, value in scope["headers"]}
        self.received.append(Received(scope["method"], scope["path"], scope["http_version"],
                                      scope["scheme"], headers.get("apns-topic"), body))
        token = scope["path"].rsplit("/", 1)[-1]
        answer = 503 if self.down else (self.answers[token].popleft()
                                        if self.answers[token] else 200)
        status, reason = answer if isinstance(answer, tuple) else (answer, None)
        extra = [(b"retry-after", b"1")] if status == 429 else []
        body = b""
        if reason is not None:
            body = json.dumps({"reason": reason}).encode()
            extra.append((b"content-type", b"application/json"))
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"apns-id", b"test"), *extra]})
        await send({"type": "http.response.body", "body": body})

    def _config(self) -> Config:
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.certfile, config.keyfile = str(self.cert_file), str(self.key_file)
        config.ca_certs = str(self.client_ca_file)
        config.verify_mode = ssl.CERT_REQUIRED  # APNs knows the provider by its certificate
        config.alpn_protocols = ["h2"]  # HTTP/2 only, as APNs
        config.accesslog = config.errorlog = None
        return config

    def start(self) -> "PushService":
        started = threading.Event()

        def run():
            self._loop = asyncio.new_event_loop()
            self._stop = asyncio.Event()
            self._loop.call_soon(started.set)
            self._loop.run_until_complete(serve(self._app, self._config(),
                                                shutdown_trigger=self._stop.wait))

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        started.wait(10)
        self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        import socket
        import time
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the push service did not start")

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)
