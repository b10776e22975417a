"""The Procfile's web line and its connections: a client's connection is kept for its next
request, also after an answer given before the request's body was read, and one client (silent,
stuck halfway through its request, pipelining) holds up no other and is answered
whole."""
from __future__ import annotations

import http.client
import re
import socket
import time

from tests.test_procfile_web import web  # noqa: F401  (the fixture)

# A body of 200 KB: more than the 64 KiB gunicorn reads of what an answer left unread.
LARGE_BODY = b'{"phone": "+79123456789", "firstName": "' + b"a" * 200_000 + b'"}'


def _address(web) -> tuple[str, int]:  # noqa: F811
    host, _, port = web[0].removeprefix("http://").partition(":")
    return host, int(port)


def _answer(connection: socket.socket) -> tuple[bytes, bytes]:
    """One answer read from `connection` (its head and its body, by Content-Length)."""
    reader = connection.makefile("rb")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = reader.readline()
        assert line, f"closed after {head!r}"
        head += line
    length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head).group(1))
    return head, reader.read(length)


def test_a_connection_is_kept_for_the_clients_next_request(web):  # noqa: F811
    """The registers' gain (docs/performance.md's git history, round fourteen): no connect and close
    a request. The second request travels on the first one's socket."""
    host, port = _address(web)
    connection = http.client.HTTPConnection(host, port, timeout=30)
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


def test_a_silent_connection_holds_up_no_other_client(web):  # noqa: F811
    """A client that connects and says nothing yet (one process, WEB_CONCURRENCY=1) does not
    keep the process from answering another; once it speaks, it is answered too."""
    host, port = _address(web)
    silent = socket.create_connection((host, port), timeout=30)
    other = http.client.HTTPConnection(host, port, timeout=30)
    try:
        time.sleep(0.2)  # the silent one accepted first
        other.request("GET", "/health")
        assert other.getresponse().status == 200
        silent.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert silent.makefile("rb").readline().startswith(b"HTTP/1.1 200")
    finally:
        other.close()
        silent.close()


def test_a_client_stuck_halfway_through_its_header_holds_up_no_other(web):  # noqa: F811
    """One process (WEB_CONCURRENCY=1): a client sends half of its request's header and holds
    it; the process's other thread answers another client meanwhile. The client's timeout is
    well under the 30 s a stuck request once held up every other request of its process."""
    host, port = _address(web)
    stuck = socket.create_connection((host, port), timeout=30)
    other = http.client.HTTPConnection(host, port, timeout=10)
    try:
        stuck.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Half: ")
        time.sleep(0.2)  # the stuck one taken first
        other.request("GET", "/health")
        assert other.getresponse().status == 200
    finally:
        other.close()
        stuck.close()


def test_requests_pipelined_in_one_go_are_all_answered(web):  # noqa: F811
    """A thousand tiny requests sent at once, read some 450 at a time: each is answered in
    order."""
    host, port = _address(web)
    count = 1000
    with socket.create_connection((host, port), timeout=30) as client:
        client.sendall(b"GET / HTTP/1.1\r\n\r\n" * count)
        answers = b""
        while answers.count(b"HTTP/1.1 404 ") < count:
            chunk = client.recv(65536)
            assert chunk, f"closed after {answers.count(b'HTTP/1.1 ')} answers"
            answers += chunk
    assert answers.count(b"HTTP/1.1 ") == count


def _post_then_get(web, head: bytes) -> tuple[bytes, bytes]:  # noqa: F811
    """`head` with LARGE_BODY, then a GET of /health on the same connection: both heads."""
    with socket.create_connection(_address(web), timeout=30) as connection:
        connection.sendall(head + f"Content-Length: {len(LARGE_BODY)}\r\n\r\n".encode()
                           + LARGE_BODY)
        early, _ = _answer(connection)
        connection.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        then, _ = _answer(connection)
    return early, then


def test_after_an_answer_before_the_body_was_read_the_connection_carries_the_next(web):  # noqa: F811
    """A 401 to a key that is no key, sent with a body of 200 KB, is answered before the body
    is read: the rest is read and dropped, and the connection, announced as kept, carries
    the client's next request (gunicorn closed it, having read 64 KiB of the rest)."""
    early, then = _post_then_get(web, b"POST /v1/customers HTTP/1.1\r\nHost: x\r\n"
                                      b"Authorization: Bearer junk\r\n"
                                      b"Content-Type: application/json\r\n")
    assert early.startswith(b"HTTP/1.1 401 ") and b"connection: close" not in early.lower()
    assert then.startswith(b"HTTP/1.1 200 ")


def test_after_a_refused_content_type_the_connection_carries_the_next(tenant, web):  # noqa: F811
    early, then = _post_then_get(web, (f"POST /v1/customers HTTP/1.1\r\nHost: x\r\n"
                                       f"Authorization: Bearer {tenant.key}\r\n"
                                       "Content-Type: text/plain\r\n").encode())
    assert early.startswith(b"HTTP/1.1 415 ") and b"connection: close" not in early.lower()
    assert then.startswith(b"HTTP/1.1 200 ")
