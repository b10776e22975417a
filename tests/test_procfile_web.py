"""The Procfile's `web` line as deployed (gunicorn with app.serving): no log line carries a card
token, a gift-card code or a key (they travel in the URL path and headers), a chunked body over
the limit is a 413 and one with broken framing a 400, a doubled slash is a 404 (never a redirect
to the Host header), gunicorn leaves no control socket under the home directory, every line is
JSON, and an answer streamed for longer than the worker timeout comes whole. How it treats
connections: tests/test_web_connections.py."""
from __future__ import annotations

import http.client
import json
import os
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

from testbed.ports import free_port
from tests.conftest import TEST_PEPPER

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


def test_a_malformed_request_is_logged_by_the_kind_of_its_error_alone(app, client, tenant, web):
    """gunicorn refuses these before the app sees them; its warning would quote the line (or
    the header) it could not parse. Its HTML answer quotes it too, to the client that sent it."""
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

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    warnings = [line["message"] for line in lines if line["logger"] == "gunicorn.error"
                and line["level"] == "WARNING"]
    assert len(warnings) == len(heads)
    assert warnings[0] == ("Invalid request from ip=127.0.0.1: Invalid HTTP request line "
                           "(what was sent is not shown)")
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


def test_an_answer_written_for_longer_than_the_worker_timeout_comes_whole(tmp_path):
    """The web's gunicorn settings (app.serving), with a 2 s worker timeout, serving
    tests/streaming_app.py: an answer that writes a part every 0.3 s for 3 s (a year's report,
    streamed under load) comes whole: the arbiter's timeout is over the worker, whose loop goes
    on while a thread writes."""
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
        assert "WORKER TIMEOUT" not in log.read_text()
