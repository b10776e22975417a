"""The web worker (app/serving_worker.py and the modules it names): its graceful stop (what is
queued is answered, and once the whole instance stops, the listening socket completes no new
connection), its
settings read once (in the loop it serves from) and its heartbeat given once a second and from
each part of an answer written; with one thread, each request served in its loop, a new or a
closing connection waiting in its selector, pipelined requests handed back to it; its logger
builds no access line."""
from __future__ import annotations

import os
import socket

from gunicorn.config import Config
from gunicorn.workers.gthread import PollableMethodQueue

from app import serving_worker
from app.serving_heartbeat import BeatingWhileWriting
from app.serving_log import ServingLog
from app.serving_stop import instance_stopping, take_no_new_connections
from app.serving_worker import SettledConfig, WebWorker


def test_a_filtered_listener_completes_no_new_connection_and_keeps_those_queued():
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    queued = socket.create_connection(("127.0.0.1", port))
    take_no_new_connections(listener)
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
        os.write(writing, b"1" if instance_stopping(listener) else b"0")
        os._exit(0)
    os.waitpid(child, 0)
    assert os.read(reading, 1) == b"0"
    # This process's own parent holds no copy, as gunicorn's master after it closed its own.
    assert instance_stopping(listener)
    listener.close()


class CountingConfig(Config):
    reads = 0

    def __getattr__(self, name):
        CountingConfig.reads += 1
        return super().__getattr__(name)


def test_a_serving_worker_reads_each_setting_of_gunicorn_once():
    config = CountingConfig()
    config.set("limit_request_line", 2048)
    hook, ssl = config.pre_request, config.is_ssl
    settled = SettledConfig(config)
    assert settled.limit_request_line == 2048
    assert settled.pre_request is hook  # a hook is a setting like the others
    assert settled.is_ssl == ssl  # one of Config's properties
    before = CountingConfig.reads
    for _ in range(3):
        assert settled.limit_request_line == 2048
        assert settled.pre_request is hook
    assert CountingConfig.reads == before


class Heartbeat:
    given = 0

    def notify(self):
        self.given += 1


def test_the_arbiters_heartbeat_is_given_at_most_once_a_second(monkeypatch):
    worker = WebWorker.__new__(WebWorker)  # no sockets, no app: only its heartbeat is asked
    worker.tmp = Heartbeat()
    now = [1000.0]
    monkeypatch.setattr(serving_worker.time, "monotonic", lambda: now[0])
    worker.notify()
    for _ in range(5):
        now[0] += 0.1
        worker.notify()
    assert worker.tmp.given == 1
    now[0] += 0.6  # a second after the first
    worker.notify()
    assert worker.tmp.given == 2


def test_the_logger_builds_no_access_line_even_where_gunicorn_would():
    from app import serving

    config = Config()
    config.set("logconfig_dict", serving.logconfig_dict)  # as served: gunicorn would log access
    config.set("logger_class", serving.logger_class)
    assert config.logger_class is ServingLog
    log = ServingLog(config)
    assert log.access_log_enabled  # gunicorn's own test: it would build the line's fields...
    log.access(None, None, None, 0)  # ...from a response, request and environ, none given here


def test_the_worker_serves_with_its_settings_settled(monkeypatch):
    from gunicorn.workers.gthread import ThreadWorker

    worker = WebWorker.__new__(WebWorker)
    worker.cfg, worker.sockets = Config(), []
    serving_with = []
    monkeypatch.setattr(ThreadWorker, "run", lambda self: serving_with.append(self.cfg))
    worker.run()
    assert isinstance(serving_with[0], SettledConfig)


def _stopping_worker(listener) -> tuple[WebWorker, list]:
    """A worker told to stop, its loop's poller holding `listener`; what it hands its
    threads is recorded, not served."""
    import selectors

    worker = WebWorker.__new__(WebWorker)
    worker.cfg, worker.sockets, worker.nr_conns = Config(), [listener], 0
    worker.poller, worker._accepting, worker.alive = selectors.DefaultSelector(), False, True
    handed = []
    worker.enqueue_req = handed.append
    worker.set_accept_enabled(True)  # as its loop starts
    worker.alive = False  # SIGTERM
    return worker, handed


def test_a_stopping_worker_answers_every_connection_already_queued_then_closes_its_socket():
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)
    port = listener.getsockname()[1]
    queued = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    worker, handed = _stopping_worker(listener)
    worker.set_accept_enabled(False)  # gunicorn's loop, once it has left serving
    assert len(handed) == 3 and worker.nr_conns == 3
    queued[0].sendall(b"POST")
    assert handed[0].sock.recv(4) == b"POST"  # the queued connection itself, to be answered
    assert listener.fileno() == -1  # closed: once every worker's is, connections are refused
    worker.set_accept_enabled(False)  # asked again: the socket is not drained twice
    assert len(handed) == 3
    for sock in [*queued, *(conn.sock for conn in handed)]:
        sock.close()


def test_a_worker_at_its_connection_limit_takes_nothing_early():
    listener = socket.create_server(("127.0.0.1", 0), backlog=8)
    queued = socket.create_connection(("127.0.0.1", listener.getsockname()[1]))
    worker, handed = _stopping_worker(listener)
    worker.alive = True  # serving, at worker_connections: gunicorn stops accepting for a while
    worker.set_accept_enabled(False)
    assert handed == [] and listener.fileno() != -1
    for sock in (queued, listener):
        sock.close()


def test_nginx_drops_an_idle_connection_before_an_instance_closes_it():
    """What keeps a rolling restart whole with kept connections: nginx never sends a POST on a
    connection the instance is closing, because it drops its idle ones first, both while the
    instance serves (its keepalive) and while it stops (gunicorn's linger for kept ones)."""
    import re
    from pathlib import Path

    from gunicorn.workers import gthread

    from app import serving

    site = (Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "loyalty.conf").read_text()
    [nginx_idle] = re.findall(r"^\s*keepalive_timeout\s+(\d+)s;", site, re.MULTILINE)
    assert int(nginx_idle) < gthread.STOP_KEEPALIVE_LINGER <= serving.keepalive


def _worker_of_one_thread() -> WebWorker:
    """A worker of one thread (WEB_THREADS=1) as its loop has it, with no thread pool at all:
    a request handed to one would fail."""
    import selectors
    from collections import deque

    worker = WebWorker.__new__(WebWorker)
    worker.cfg = Config()
    worker.cfg.set("threads", 1)
    worker.poller, worker.tpool, worker.nr_conns = selectors.DefaultSelector(), None, 1
    worker.pending_conns, worker.keepalived_conns, worker.alive = deque(), deque(), True
    worker.closing_conns, worker.method_queue = deque(), PollableMethodQueue()
    worker.method_queue.init()
    worker.poller.register(worker.method_queue.fileno(), selectors.EVENT_READ,
                           worker.method_queue.run_callbacks)
    return worker


def _connection(worker: WebWorker, spoken: bool = True):
    """A connection accepted by `worker` (gunicorn's TConn), its request come (`spoken`) or
    not yet, and the client's end of it."""
    from gunicorn.workers.gthread import TConn

    ours, theirs = socket.socketpair()
    conn = TConn(worker.cfg, ours, ("127.0.0.1", 1), ("127.0.0.1", 2))
    conn.data_ready = spoken
    return conn, theirs


def _turn(worker: WebWorker) -> None:
    """One turn of the worker's loop: what is ready is dispatched (gunicorn's run)."""
    for key, _ in worker.poller.select(5):
        key.data(key.fileobj)


def test_a_worker_of_one_thread_serves_a_request_in_its_own_loop(monkeypatch):
    import threading

    worker, served_in = _worker_of_one_thread(), []
    monkeypatch.setattr(worker, "handle",
                        lambda conn: served_in.append(threading.get_ident()) or False)
    conn, theirs = _connection(worker)
    theirs.close()  # the client is gone once answered
    worker.enqueue_req(conn)
    assert served_in == [threading.get_ident()]
    _turn(worker)  # the client's close is read
    assert worker.nr_conns == 0 and conn.sock.fileno() == -1  # answered; not kept, as handle said


def test_a_new_connection_of_a_worker_of_one_thread_waits_in_its_selector(monkeypatch):
    """A client that connects and sends nothing yet holds up no other client of the process:
    its first bytes are awaited by the loop's selector, not read with the loop blocked."""
    worker, served = _worker_of_one_thread(), []
    monkeypatch.setattr(worker, "handle", lambda conn: served.append(conn) or False)
    conn, theirs = _connection(worker, spoken=False)
    worker.enqueue_req(conn)
    assert served == [] and list(worker.pending_conns) == [conn]
    theirs.sendall(b"GET /health HTTP/1.1\r\n\r\n")
    _turn(worker)  # the loop dispatches the readable connection
    assert served == [conn] and not worker.pending_conns
    theirs.close()


def test_a_stopping_worker_of_one_thread_still_waits_for_a_queued_connections_request():
    """The stop's drain takes connections whose request may not have come yet: they wait in
    the selector as while serving, to be answered, not closed unheard."""
    worker = _worker_of_one_thread()
    worker.alive = False  # SIGTERM; what was queued is being taken
    conn, theirs = _connection(worker, spoken=False)
    worker.enqueue_req(conn)
    assert list(worker.pending_conns) == [conn] and conn.sock.fileno() != -1
    for sock in (conn.sock, theirs):
        sock.close()


def _answered_with_a_close(worker: WebWorker):
    """A connection of `worker` whose request was answered with `Connection: close`: the
    worker's end and the client's."""
    conn, theirs = _connection(worker)
    worker.handle = lambda conn: False
    worker.enqueue_req(conn)
    return conn, theirs


def test_a_worker_of_one_thread_waits_for_a_closing_client_in_its_selector():
    """gunicorn lingers for the client's close in a blocking read, up to two seconds: with one
    thread, a client that keeps its end open after a closing answer would hold up every other
    client of the process meanwhile."""
    worker = _worker_of_one_thread()
    conn, theirs = _answered_with_a_close(worker)
    assert list(worker.closing_conns) == [conn] and worker.nr_conns == 1
    assert theirs.recv(1) == b""  # our side is closed: the client has its end of the answer
    theirs.sendall(b"more")  # what a client still sends is read and dropped, not reset
    _turn(worker)
    assert list(worker.closing_conns) == [conn] and conn.sock.fileno() != -1
    theirs.close()
    _turn(worker)
    assert not worker.closing_conns and worker.nr_conns == 0 and conn.sock.fileno() == -1


def test_a_closing_client_that_goes_on_sending_is_closed_after_64_kib():
    worker = _worker_of_one_thread()
    conn, theirs = _answered_with_a_close(worker)
    theirs.sendall(b"x" * (serving_worker.CLOSE_DRAIN_MOST - 1))
    while conn.drained < serving_worker.CLOSE_DRAIN_MOST - 1:
        _turn(worker)
    assert list(worker.closing_conns) == [conn]  # under the cap: still waiting for its close
    theirs.sendall(b"x")
    _turn(worker)
    assert not worker.closing_conns and worker.nr_conns == 0 and conn.sock.fileno() == -1
    theirs.close()


def test_a_client_that_never_closes_is_closed_after_gunicorns_two_seconds(monkeypatch):
    worker = _worker_of_one_thread()
    now = [1000.0]
    monkeypatch.setattr(serving_worker.time, "monotonic", lambda: now[0])
    conn, theirs = _answered_with_a_close(worker)
    worker.murder_pending()
    assert list(worker.closing_conns) == [conn]
    now[0] += serving_worker.CLOSE_LINGER
    worker.murder_pending()  # as the loop calls it each time it wakes
    assert not worker.closing_conns and worker.nr_conns == 0 and conn.sock.fileno() == -1
    theirs.close()


def test_pipelined_requests_are_served_from_the_loop_not_one_from_another():
    """Requests a client sent in one go are read together: each after the first is handed
    back to the loop, as if its socket were readable, rather than served from the previous
    one's call (gunicorn's own hand-over recurses once a request: enough tiny ones in one
    read would reach Python's recursion limit)."""
    import inspect

    worker = _worker_of_one_thread()
    conn, theirs = _connection(worker)
    theirs.sendall(b"GET /a HTTP/1.1\r\n\r\n" * 4)
    depths = []

    def handle(conn):
        conn.init()
        next(conn.parser)
        depths.append(len(inspect.stack(0)))
        return True

    worker.handle = handle
    worker.enqueue_req(conn)
    assert len(depths) == 1  # the other three are in the parser's buffer already
    _turn(worker)
    assert len(depths) == 4 and depths[1] == depths[2] == depths[3]
    assert list(worker.keepalived_conns) == [conn]  # then kept for the next
    for sock in (conn.sock, theirs):
        sock.close()


def test_each_part_of_an_answer_written_gives_the_heartbeat_and_the_body_is_closed_as_its_own():
    from gunicorn.http.wsgi import FileWrapper
    from werkzeug.wsgi import ClosingIterator

    beats, closed = [], []
    parts = iter([b"a", b"b", b"c"])
    app = BeatingWhileWriting(
        lambda environ, start_response: ClosingIterator(parts, lambda: closed.append(True)),
        lambda: beats.append(len(beats)))
    body = app({}, None)
    for index, part in enumerate(body):
        assert len(beats) == index + 1  # the heartbeat before each part is written
    assert beats == [0, 1, 2]
    body.close()  # gunicorn closes what the app returned: Flask's call_on_close runs
    assert closed == [True]
    assert not hasattr(BeatingWhileWriting(lambda e, s: [b"x"], None)({}, None),
                       "close")  # nothing to close: gunicorn is told so as before

    sent_whole = FileWrapper(open(__file__, "rb"))  # gunicorn sends it with sendfile
    assert BeatingWhileWriting(lambda e, s: sent_whole, None)({}, None) is sent_whole
    sent_whole.filelike.close()


def test_only_a_worker_of_one_thread_gives_its_heartbeat_from_the_answers(monkeypatch):
    from gunicorn.workers.base import Worker

    monkeypatch.setattr(Worker, "load_wsgi", lambda self: setattr(self, "wsgi", "the app"))
    for threads, wrapped in ((1, True), (2, False)):
        worker = WebWorker.__new__(WebWorker)
        worker.cfg = Config()
        worker.cfg.set("threads", threads)
        worker.load_wsgi()
        assert isinstance(worker.wsgi, BeatingWhileWriting) is wrapped
