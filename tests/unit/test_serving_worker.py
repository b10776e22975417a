"""The web worker's graceful stop (app/serving_worker.py): once the whole instance stops, the
listening socket completes no new connection, while those already queued are answered."""
from __future__ import annotations

import os
import socket

from app.serving_worker import _instance_stopping, _take_no_new_connections


def test_a_filtered_listener_completes_no_new_connection_and_keeps_those_queued():
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    queued = socket.create_connection(("127.0.0.1", port))
    _take_no_new_connections(listener)
    late = socket.socket()
    late.settimeout(0.5)
    try:
        late.connect(("127.0.0.1", port))
        completed = True
    except OSError:  # its SYN was dropped: it would try again, and meet the closed socket
        completed = False
    assert not completed
    accepted, _ = listener.accept()
    queued.sendall(b"POST")
    assert accepted.recv(4) == b"POST"
    for sock in (accepted, queued, late, listener):
        sock.close()


def test_the_instance_stops_only_when_the_master_holds_no_copy_of_the_socket():
    listener = socket.create_server(("127.0.0.1", 0))
    # A forked worker of this process: its master (here) still holds the socket, as at a reload.
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(writing, b"1" if _instance_stopping(listener) else b"0")
        os._exit(0)
    os.waitpid(child, 0)
    assert os.read(reading, 1) == b"0"
    # This process's own parent holds no copy, as gunicorn's master after it closed its own.
    assert _instance_stopping(listener)
    listener.close()
