"""The Procfile's web (gunicorn with app.serving) as a client reaches it: a path beginning
with a doubled slash is a 404 whatever the Host header, the Wallet web service's log endpoint
answers broken chunked framing with a 400 and a chunked body over 64 KiB with a 413, and a card
token a device quotes in its log is masked in the line written."""
from __future__ import annotations

import json
import socket

from tests.test_procfile_web import web  # noqa: F401 - the web process fixture


def _answer(base: str, *parts: bytes) -> bytes:
    """What the server answers to `parts` sent one after another as long as it takes them, up
    to its closing the connection (an answer given early ends the sending, not the test)."""
    host, _, port = base.removeprefix("http://").partition(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        try:
            for part in parts:
                connection.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered and closed before the whole body: the answer says why
        answer = b""
        try:
            while chunk := connection.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


def _chunked(body: bytes) -> list[bytes]:
    parts = [body[start:start + 65536] for start in range(0, len(body), 65536)]
    return [b"%x\r\n%s\r\n" % (len(part), part) for part in parts] + [b"0\r\n\r\n"]


def _card_token(client, tenant) -> str:
    enrolled = client.post("/v1/customers", json={"phone": "+79123456783", "firstName": "Ivan"},
                           headers=tenant.headers())
    return enrolled.get_json()["cardUrl"].rsplit("/", 1)[1]


def test_a_path_beginning_with_a_doubled_slash_is_404(client, tenant, web):  # noqa: F811
    base, _, _ = web
    token = _card_token(client, tenant)
    for path in (f"//cards/{token}", f"//cards/{token}.pkpass", "//health"):
        for host in ("evil.example", "cards"):
            answer = _answer(base, (f"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
                                    "Connection: close\r\n\r\n").encode())
            head = answer.partition(b"\r\n\r\n")[0].lower()
            assert head.startswith(b"http/1.1 404 "), (path, answer[:300])
            assert b"\r\nlocation:" not in head
    answer = _answer(base, f"GET /cards/{token} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                     .encode())
    assert answer.startswith(b"HTTP/1.1 200 ")  # the card's own path


def test_the_wallet_log_endpoint_bounds_what_it_reads_and_masks_what_it_writes(client, tenant,
                                                                                web):  # noqa: F811
    base, log, _ = web
    token = _card_token(client, tenant)
    head = ("POST /passkit/v1/log HTTP/1.1\r\nHost: shop.example\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n").encode()
    broken = _answer(base, head + b"zz\r\n{}\r\n0\r\n\r\n")
    status, _, body = broken.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 400 ") and json.loads(body)["code"] == "bad_request"

    big = b'{"logs": ["' + b"x" * (10 * 1024 * 1024) + b'"]}'
    refused = _answer(base, head, *_chunked(big))
    assert refused.startswith(b"HTTP/1.1 413 ") and b'"payload_too_large"' in refused, refused

    quoted = json.dumps({"logs": [f"fetch of https://cards.example.test/cards/{token} failed"]})
    answer = _answer(base, (f"POST /passkit/v1/log HTTP/1.1\r\nHost: shop.example\r\n"
                            f"Content-Type: application/json\r\nContent-Length: {len(quoted)}\r\n"
                            f"Connection: close\r\n\r\n{quoted}").encode())
    assert answer.startswith(b"HTTP/1.1 200 ")

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    reported = [line["message"] for line in lines if "wallet device reports" in line["message"]]
    assert reported == ["wallet device reports: fetch of https://cards.example.test/cards/*** "
                        "failed"]
    assert not [line for line in lines if line["level"] == "ERROR" or "exception" in line]
    assert token not in log.read_text()
