"""The Procfile's `web` line as deployed (gunicorn with app.serving): no log line carries a card
token or a gift-card code (they travel in the URL path), a chunked body over the limit is a
413 and one with broken framing a 400, a doubled slash is a 404 (never a redirect to the Host
header), gunicorn leaves no control socket under the home directory, every line is JSON, a
client's connection is kept for its next request, and one client (silent, slow to close,
pipelining) holds up no other and is answered whole."""
from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import TEST_PEPPER
from tests.deployed.procfile import holding_connections
from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
STARTUP_SECONDS = 60


def _web_command() -> list[str]:
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines()
                if line.startswith("web:"))
    command = shlex.split(line.partition(":")[2])
    assert command[0] == "gunicorn"
    return [str(Path(sys.executable).parent / "gunicorn"), *command[1:]]


@contextmanager
def _serving(command: list[str], env: dict[str, str], log: Path):
    """`command` (a gunicorn) started on env's PORT, its output in `log`; yields its base URL once
    it answers /health, and stops it with SIGTERM."""
    with log.open("wb") as output:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{env['PORT']}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                urllib.request.urlopen(f"{base}/health", timeout=5).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


@pytest.fixture
def web(database_url, tmp_path, request):
    """The web process on a port of its own; yields (base url, log file, its home directory).
    Indirect parameters are more settings."""
    port, home, log = free_port(), tmp_path / "home", tmp_path / "web.log"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "REDIS_URL")}
    env.update(DATABASE_URL=database_url, API_KEY_PEPPER=TEST_PEPPER, PORT=str(port),
               PUBLIC_BASE_URL="https://cards.example.test", WEB_CONCURRENCY="1",
               LOG_LEVEL="INFO", HOME=str(home))
    env.update(getattr(request, "param", {}))
    with _serving(_web_command(), env, log) as base:
        yield base, log, home


def _get(url: str, headers: dict | None = None, method: str = "GET") -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {},
                                                           method=method), timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _raw(base: str, data: bytes) -> bytes:
    """What the server answers to `data` sent as is, up to its closing the connection."""
    host, _, port = base.removeprefix("http://").partition(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(data)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_no_log_line_carries_a_card_token_or_a_gift_card_code(app, client, tenant, web):
    base, log, _ = web
    issued = app.test_cli_runner().invoke(
        args=["gift-cards", "issue", tenant.company_id, "--amount", "500.00"])
    assert issued.exit_code == 0, issued.output
    code = issued.output.splitlines()[-1]
    enrolled = client.post("/v1/customers", json={"phone": "+79123456789", "firstName": "Ivan"},
                           headers=tenant.headers())
    token = enrolled.get_json()["cardUrl"].rsplit("/", 1)[1]
    auth = tenant.headers()

    assert _get(f"{base}/v1/gift-cards/{code}", auth) == 200
    mistyped = code[:-1] + ("Y" if code.endswith("Z") else "Z")
    assert _get(f"{base}/v1/gift-cards/{mistyped}", auth) == 404
    assert _get(f"{base}/v1/gift-cards/{code}/extra", auth) == 404  # matches no route
    assert _get(f"{base}/v1/gift-cards/{code}", auth, method="DELETE") == 405
    assert _get(f"{base}/cards/{token}") == 200
    assert _get(f"{base}/cards/{token}.pkpass") == 503  # no pass certificate configured
    assert _get(f"{base}/cards/{token}/extra") == 404

    written = log.read_text()
    assert '"route": "/v1/gift-cards/<code>"' in written  # the request lines were written
    assert code not in written and mistyped not in written and code[:-1] not in written
    assert token not in written


def test_a_malformed_request_line_is_told_by_its_method_alone(app, client, tenant, web):
    """gunicorn refuses these before the app sees them; its warning and its HTML answer would
    quote the line (or the header) it could not parse."""
    base, log, _ = web
    issued = app.test_cli_runner().invoke(
        args=["gift-cards", "issue", tenant.company_id, "--amount", "500.00"])
    code = issued.output.splitlines()[-1]
    enrolled = client.post("/v1/customers", json={"phone": "+79123456780", "firstName": "Ivan"},
                           headers=tenant.headers())
    token = enrolled.get_json()["cardUrl"].rsplit("/", 1)[1]
    secrets = (token, code, tenant.key)
    heads = [f"GET /cards/{token}\x7f HTTP/1.1\r\nHost: shop.example\r\n\r\n",
             f"GET /v1/gift-cards/{code}\x7f HTTP/1.1\r\nHost: shop.example\r\n\r\n",
             f"GET /v1/company?k={tenant.key}\x00 HTTP/1.1\r\nHost: shop.example\r\n\r\n",
             f"GET /cards/{token[:8]} {token[8:]} HTTP/1.1\r\nHost: shop.example\r\n\r\n",
             f"GET /v1/company HTTP/1.1\r\nAuthorization Bearer {tenant.key}\r\n\r\n"]
    for head in heads:
        answer = _raw(base, head.encode("latin-1"))
        assert answer.startswith(b"HTTP/1.1 400 "), answer
        assert not [secret for secret in secrets if secret[8:].encode() in answer], answer

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    warnings = [line["message"] for line in lines if line["logger"] == "gunicorn.error"
                and line["level"] == "WARNING"]
    assert len(warnings) == len(heads)
    assert warnings[0] == "Invalid request from ip=127.0.0.1: InvalidRequestLine (method GET)"
    written = log.read_text()
    assert not [secret for secret in secrets if secret[8:] in written]


def test_a_doubled_slash_is_404_never_a_redirect_to_the_host_header(client, tenant, web):
    base, _, _ = web
    enrolled = client.post("/v1/customers", json={"phone": "+79123456782", "firstName": "Ivan"},
                           headers=tenant.headers())
    token = enrolled.get_json()["cardUrl"].rsplit("/", 1)[1]
    for path, headers in ((f"/cards//{token}", ""), ("/static//app.css", ""),
                          ("/v1//company", f"Authorization: Bearer {tenant.key}\r\n")):
        answer = _raw(base, (f"GET {path} HTTP/1.1\r\nHost: evil.example\r\n{headers}"
                             "Connection: close\r\n\r\n").encode())
        head = answer.partition(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"http/1.1 404 "), answer
        assert b"\r\nlocation:" not in head and b"evil.example" not in answer


def test_a_chunked_body_over_the_limit_is_413(tenant, web):
    base, _, _ = web
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=120)
    body = b'{"phone": "+79123456789", "firstName": "' + b"a" * (17 * 1024 * 1024) + b'"}'
    # No Content-Length: http.client sends an iterable body chunked.
    chunks = (body[i:i + 65536] for i in range(0, len(body), 65536))
    connection.request("POST", "/v1/customers", body=chunks, encode_chunked=True,
                       headers={**tenant.headers(), "Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 413, response.read()[:300]
    assert b'"payload_too_large"' in response.read()
    connection.close()


@pytest.mark.parametrize("framing", [b"zz\r\n{}\r\n0\r\n\r\n", b"2\r\n{}XX0\r\n\r\n"],
                         ids=["chunk size not hex", "chunk without its CRLF"])
def test_a_chunked_body_with_broken_framing_is_400(tenant, web, framing):
    base, log, _ = web
    head = (f"POST /v1/customers HTTP/1.1\r\nHost: shop.example\r\n"
            f"Authorization: Bearer {tenant.key}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nX-Request-Id: broken-framing\r\n\r\n").encode()
    answer = _raw(base, head + framing)
    status, _, body = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 400 "), answer
    assert json.loads(body) == {"detail": "the request body cannot be read: its chunked framing "
                                          "is broken", "code": "bad_request"}
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["status"] for line in lines if line.get("requestId") == "broken-framing"] == [400]
    assert not [line for line in lines if line["level"] == "ERROR" or "exception" in line]


def test_gunicorn_makes_no_control_socket_under_home(web):
    _, _, home = web
    assert _get(f"{web[0]}/health") == 200
    assert not (home / ".gunicorn").exists()
    assert list(home.iterdir()) == []


def test_every_line_is_json_and_each_request_is_logged_once(web):
    base, log, _ = web
    for _ in range(3):
        assert _get(f"{base}/health", {"X-Request-Id": "health-check-1"}) == 200
    lines = [json.loads(line) for line in log.read_text().splitlines()]  # a plain line fails
    assert any(line["logger"] == "gunicorn.error" and "Booting worker" in line["message"]
               for line in lines)
    mentions = [line for line in lines if "health-check-1" in json.dumps(line)]
    assert len(mentions) == 3 and all(line["route"] == "/health" for line in mentions)


def test_a_connection_is_kept_for_the_clients_next_request(web):
    """The registers' gain (docs/performance.md's git history, round fourteen): no connect and close
    a request. The second request travels on the first one's socket."""
    host, _, port = web[0].removeprefix("http://").partition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        sockets = []
        for _ in range(2):
            connection.request("GET", "/health")
            response = connection.getresponse()
            response.read()
            assert response.status == 200 and response.getheader("Connection") != "close"
            sockets.append(connection.sock.getsockname())  # http.client reconnects if closed
        assert sockets[0] == sockets[1]
    finally:
        connection.close()


@pytest.mark.parametrize("web, web_threads", [({"WEB_THREADS": n}, n) for n in ("1", "2")],
                         indirect=["web"])
def test_a_silent_connection_holds_up_no_other_client(web, web_threads):
    """A client that connects and says nothing yet (one process, WEB_CONCURRENCY=1) does not
    keep the process from answering another; once it speaks, it is answered too. Served in the
    worker's own loop (one thread) as from its pool (two)."""
    host, _, port = web[0].removeprefix("http://").partition(":")
    silent = socket.create_connection((host, int(port)), timeout=30)
    other = http.client.HTTPConnection(host, int(port), timeout=3)  # sooner than gunicorn's 5 s
    try:
        time.sleep(0.2)  # the silent one accepted first
        other.request("GET", "/health")
        assert other.getresponse().status == 200
        silent.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert silent.makefile("rb").readline().startswith(b"HTTP/1.1 200")
    finally:
        other.close()
        silent.close()
    # WEB_THREADS is read: one thread serves in the loop, two from a pool beside it.
    [worker] = re.findall(r"Booting worker with pid: (\d+)", web[1].read_text())
    threads = len(os.listdir(f"/proc/{worker}/task"))
    assert threads == 1 if web_threads == "1" else threads > 1


def test_a_client_keeping_its_end_open_after_a_closing_answer_holds_up_no_other(web):
    """One process of one thread (the Procfile's, WEB_CONCURRENCY=1): after an answer with
    `Connection: close` the worker waits up to two seconds for the client to close too (RFC
    9112 §9.6), and meanwhile answers others. gunicorn's own wait blocks the process."""
    host, _, port = web[0].removeprefix("http://").partition(":")
    lingering = socket.create_connection((host, int(port)), timeout=30)
    other = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        lingering.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := lingering.recv(65536):  # up to the worker's half close
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        other.request("GET", "/health")
        assert other.getresponse().status == 200
        # ...answered while the worker still held the first connection, waiting on its client
        [worker] = re.findall(r"Booting worker with pid: (\d+)", web[1].read_text())
        assert holding_connections([int(worker)], {int(port)},
                                   remote_ports={lingering.getsockname()[1]}) == [int(worker)]
    finally:
        other.close()
        lingering.close()


def test_requests_pipelined_in_one_go_are_all_answered(web):
    """A thousand tiny requests sent at once, read some 450 at a time: each is answered in
    order (gunicorn's own hand-over served each from the last one's call and ran out of
    stack, resetting the connection)."""
    host, _, port = web[0].removeprefix("http://").partition(":")
    count = 1000
    with socket.create_connection((host, int(port)), timeout=30) as client:
        client.sendall(b"GET / HTTP/1.1\r\n\r\n" * count)
        answers = b""
        while answers.count(b"HTTP/1.1 404 ") < count:
            chunk = client.recv(65536)
            assert chunk, f"closed after {answers.count(b'HTTP/1.1 ')} answers"
            answers += chunk
    assert answers.count(b"HTTP/1.1 ") == count


def test_an_answer_still_being_written_keeps_its_worker_alive_and_a_silent_one_does_not(tmp_path):
    """The web's gunicorn settings and worker (app.serving), with a 2 s worker timeout, serving
    tests/streaming_app.py: an answer that writes a part every 0.3 s for 3 s comes whole (each
    part written is the worker's heartbeat); one that writes nothing for 3 s is cut off by the
    arbiter, as gunicorn's timeout is meant to."""
    port, log = free_port(), tmp_path / "web.log"
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(PORT=str(port), WEB_CONCURRENCY="1", HOME=str(tmp_path))
    command = [*_web_command()[:-1], "--timeout", "2", "tests.streaming_app:app"]
    with _serving(command, env, log):
        streamed = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        streamed.request("GET", "/stream")
        body = streamed.getresponse().read()
        assert body.decode().splitlines() == [f"part {index}" for index in range(10)]
        streamed.close()
        silent = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        silent.request("GET", "/silent")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            silent.getresponse().read()
        assert "WORKER TIMEOUT" in log.read_text()
