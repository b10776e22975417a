"""The web's gunicorn worker and logger (app.serving). The logger is gunicorn's, building no
access log line (ServingLog); the worker is gunicorn's threaded worker (gthread: each
connection kept open between requests while its client keeps it, watched by the worker's loop),
which

- with one thread (WEB_THREADS=1, the Procfile's), serves each request in that loop, where
  gthread hands it to a pool thread and the answer back: a wakeup of each and their turns at
  the interpreter, on every request. A new connection's first bytes are awaited by the loop's
  selector, so a client that connects and says nothing holds up no other; a request that has
  begun is read to its end with the loop waiting, as gunicorn's sync worker does (nginx sends
  an instance whole requests), and the arbiter's timeout is over each request again, counted
  from the last part of its answer written (_BeatingWhileWriting). A
  connection closed after its answer waits in the selector for the client to close too, and
  pipelined requests are handed back to the loop one by one: both were gunicorn's to do in a
  blocking wait and in a recursion (WebWorker.close_when_client_has, enqueue_req);
- reads gunicorn's settings once, as it starts serving, and gives the arbiter its heartbeat
  once a second rather than each time its loop wakes (SettledConfig, WebWorker.notify): both
  were paid on every request;

- tells of a request it cannot parse by the error's name and the request's method, never the
  rest of the line or a header. gunicorn's own warning ("Invalid request from ip=…: Invalid
  HTTP request line: 'GET /cards/<token>\\x7f HTTP/1.1'") and the HTML 400 it answers with quote
  what they could not parse: a card token, a gift-card code, an API key in a query or an
  Authorization header (CONTRACT §12). Every parse error is told by its name instead, whatever
  it carries, so an error gunicorn adds later is covered too;
- on a graceful stop, answers every connection already made to it before it exits (§19).
  gunicorn's own worker stops accepting at SIGTERM and exits once the connections it holds are
  done. The listening socket stays open in the workers until the last one exits, so the kernel
  goes on completing connections into its queue meanwhile, and they are reset when it closes:
  behind nginx, each is a request already sent (nginx never resends a POST), answered 502. This
  worker takes what is queued, answers it, and closes its socket as soon as the queue is empty;
  once every worker has, new connections are refused, and nginx sends those to the next
  instance. Between the queue found empty and the socket closed, a busy machine may deschedule
  the worker for milliseconds, and a connection the kernel completes then would be reset with
  its request: so when the whole instance stops, the first worker to drain first makes the
  listening socket drop every new connection's packets (a socket filter), and nothing joins the
  queue after it. The client's connection attempt is refused on its retry, once the socket is
  closed. A connection kept open at the stop is answered with `Connection: close` if a request
  comes on it within gunicorn's two seconds, and closed after them; nginx closes its idle ones
  to an instance sooner (deploy/nginx/loyalty.conf), so it never sends on one being closed."""
from __future__ import annotations

import ctypes
import os
import re
import select
import selectors
import socket
import struct
import time
from collections import deque
from functools import partial

from gunicorn import util
from gunicorn.glogging import Logger
from gunicorn.http.errors import ParseException
from gunicorn.http.message import Request
from gunicorn.http.wsgi import FileWrapper
from gunicorn.workers.gthread import DEFAULT_WORKER_DATA_TIMEOUT, ThreadWorker

# A method as registers and browsers send them; anything else read as one is not shown either.
_PLAIN_METHOD = re.compile(r"[A-Z][A-Z-]{0,19}")
SO_ATTACH_FILTER = getattr(socket, "SO_ATTACH_FILTER", 26)  # Linux's
# A classic BPF program of one instruction, BPF_RET | BPF_K with k = 0: keep no byte of any packet.
_DROP_EVERY_PACKET = struct.pack("HBBI", 0x06, 0, 0, 0)
# gunicorn's close_graceful: how long, and how much of what a client still sends, a closing
# connection waits for the client to close too.
CLOSE_LINGER, CLOSE_DRAIN_MOST = 2.0, 65536


class WebWorker(ThreadWorker):
    _notified = float("-inf")  # when the arbiter's heartbeat was last given (notify)
    _drained = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.closing_conns = deque()  # answered with a close, waiting for the client's (below)

    def enqueue_req(self, conn):
        # One thread: served here, in the loop (above); a new connection once it has spoken.
        if self.cfg.threads > 1:
            return super().enqueue_req(conn)
        if not conn.initialized and not conn.data_ready:
            # Not gthread's own deferral (finish_request's _DEFER): it drops the connection
            # once the worker stops, and the stop's drain hands over just such connections.
            conn.sock.setblocking(False)
            conn.timeout = time.monotonic() + DEFAULT_WORKER_DATA_TIMEOUT
            self.pending_conns.append(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 partial(self.on_pending_socket_readable, conn))
            return
        keep = self.handle(conn)
        if keep and conn.parser.unreader.buf.getvalue():
            # Pipelined: the client's next request is read already, and no readiness of the
            # socket will tell of it. Served on the loop's next turn, after whatever else is
            # ready: gunicorn's finish_request would serve it from here, a recursion a request.
            self.method_queue.defer(self.enqueue_req, conn)
            return
        self.finish_request(conn, _Served(keep))

    def finish_request(self, conn, fs):
        if self.cfg.threads > 1 or fs.result():
            return super().finish_request(conn, fs)
        self.close_when_client_has(conn)

    def close_when_client_has(self, conn) -> None:
        """Close a connection as gunicorn does (RFC 9112 §9.6: our side first, then what the
        client still sends read and dropped until it closes too, for at most two seconds or
        64 KiB, so that no reset cuts off the answer), but with the loop waiting on the
        client, not blocked by it: gunicorn lingers in a blocking read, and with one thread
        nothing else of the process would run meanwhile."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 partial(self.on_closing_socket_readable, conn))
        except (OSError, ValueError):  # the client is gone already
            self.closed(conn)
            return
        conn.timeout, conn.drained = time.monotonic() + CLOSE_LINGER, 0
        self.closing_conns.append(conn)

    def on_closing_socket_readable(self, conn, client) -> None:
        try:
            dropped = len(client.recv(65536))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            dropped = 0
        conn.drained += dropped
        if not dropped or conn.drained >= CLOSE_DRAIN_MOST:
            self.closed(conn)

    def murder_pending(self):
        # gunicorn's loop calls this each time it wakes (at least once a second), stopping too.
        super().murder_pending()
        now = time.monotonic()
        while self.closing_conns and self.closing_conns[0].timeout <= now:
            self.closed(self.closing_conns[0])

    def closed(self, conn) -> None:
        """The end of a connection the loop was closing."""
        if conn in self.closing_conns:
            self.closing_conns.remove(conn)
            self.poller.unregister(conn.sock)
        self.nr_conns -= 1
        util.close(conn.sock)

    def handle_error(self, req, client, addr, exc):
        if isinstance(exc, ParseException):
            exc = _told_by_name(exc)
        elif getattr(req, "uri", None):
            # "Error handling request GET /cards/<token>": the path may carry a credential.
            req.uri = "(path not shown)"
        super().handle_error(req, client, addr, exc)

    def run(self):
        self.cfg = SettledConfig(self.cfg)
        super().run()

    def load_wsgi(self):
        super().load_wsgi()
        if self.cfg.threads == 1:  # the loop serves, and gives no heartbeat meanwhile
            self.wsgi = _BeatingWhileWriting(self.wsgi, self.notify)

    def notify(self):
        # The arbiter's heartbeat: a file's time set, a system call, each time the worker's
        # loop wakes (for every connection and every answer). The arbiter looks for one within
        # `timeout` (30 s): once a second is as good.
        now = time.monotonic()
        if now - self._notified >= 1:
            super().notify()
            self._notified = now

    def set_accept_enabled(self, enabled):
        # gunicorn's loop stops accepting here, once at a stop (and while it holds as many
        # connections as it may, which is not a stop): what is queued is taken first.
        stopping = not enabled and not self.alive and not self._drained
        if stopping:
            self._drained = True
            self.answer_what_is_queued()
        super().set_accept_enabled(enabled)
        if stopping:
            for listener in self.sockets:
                listener.close()

    def answer_what_is_queued(self) -> None:
        """Accept every connection the kernel completed, for the thread pool to answer before
        the worker exits (gunicorn's stop waits for the connections it holds). A listening
        socket is readable while its queue holds one; gunicorn's `accept` takes it."""
        for listener in self.sockets:
            if _instance_stopping(listener):
                _take_no_new_connections(listener)
            listener.setblocking(False)  # a connection gone meanwhile must not block `accept`
            queued = select.poll()  # not select.select: it fails on descriptors past 1024
            queued.register(listener.fileno(), select.POLLIN)
            while queued.poll(0):
                self.accept(listener)


class _Served:
    """A request served in the loop, as `finish_request` reads a pool thread's future: its
    answer whether to keep the connection (a Future would make a lock a request)."""

    def __init__(self, keep):
        self._keep = keep

    def cancelled(self) -> bool:
        return False

    def result(self):
        return self._keep


class _BeatingWhileWriting:
    """The app as a worker of one thread calls it: each part of an answer's body written gives
    the arbiter the worker's heartbeat (`notify`, at most once a second). The arbiter kills a
    worker that gave none for its `timeout` (30 s), and the loop gives none while it serves: a
    year's CSV report, streamed for longer than that under load, would be cut off, and the
    process's kept connections with it. A request that writes nothing for 30 s still is; with
    a pool (WEB_THREADS above one) the loop beats on its own. A file gunicorn sends whole
    (`sendfile`) is handed over as it is."""

    def __init__(self, app, beat):
        self.app, self.beat = app, beat

    def __call__(self, environ, start_response):
        body = self.app(environ, start_response)
        return body if isinstance(body, FileWrapper) else _Beating(body, self.beat)


class _Beating:
    """An answer's body, giving a heartbeat with each part; closed as the body is (Flask's
    call_on_close)."""

    def __init__(self, body, beat):
        self.body, self.beat = body, beat
        if hasattr(body, "close"):
            self.close = body.close

    def __iter__(self):
        beat = self.beat
        for part in self.body:
            beat()
            yield part


class SettledConfig:
    """gunicorn's settings as a worker reads them once it serves: each looked up once, then
    kept. gunicorn's Config answers every read of a setting through `__getattr__` and the
    setting's `get()`, some thirty times a request; a serving worker's settings do not change
    (a reload starts new workers with new ones)."""

    def __init__(self, config):
        self._config = config

    def __getattr__(self, name):
        value = getattr(self._config, name)
        setattr(self, name, value)
        return value


class ServingLog(Logger):
    """gunicorn's logger, without its access log: the app logs each request once, by route
    template, where gunicorn's line would carry the raw path (app/serving.py). gunicorn would
    otherwise build each request's log fields (every header and environ entry, escaped) for a
    logger that drops them."""

    def access(self, resp, req, environ, request_time):
        pass


def _instance_stopping(listener) -> bool:
    """Whether gunicorn's master has closed its own copy of the listening socket, as it does at
    a stop before it signals the workers. At a reload, or with fewer workers, it keeps it, and
    the socket must go on taking connections for the workers that stay or come."""
    held = f"socket:[{os.fstat(listener.fileno()).st_ino}]"
    descriptors = f"/proc/{os.getppid()}/fd"
    try:
        return all(os.readlink(os.path.join(descriptors, name)) != held
                   for name in os.listdir(descriptors))
    except OSError:  # no /proc, or a descriptor closed while read: as before, close ours only
        return False


def _take_no_new_connections(listener) -> None:
    """From now on the listening socket drops every packet it is sent: no new connection is
    completed, while those already made (in the queue, with sockets of their own) are answered.
    Where the kernel refuses the filter, the socket is closed as before, race and all."""
    program = ctypes.create_string_buffer(_DROP_EVERY_PACKET)
    try:
        listener.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER,
                            struct.pack("HP", 1, ctypes.addressof(program)))
    except OSError:
        pass


def _told_by_name(error: ParseException) -> ParseException:
    """The same error (gunicorn picks the status by its class), saying only its name and the
    method of the request it broke off."""
    method = _method_read(error)
    text = f"{type(error).__name__} (method {method})" if method else type(error).__name__
    told = type(type(error).__name__, (type(error),), {"__str__": lambda self: text})
    copy = told.__new__(told)
    copy.__dict__.update(error.__dict__)
    return copy


def _method_read(error: BaseException) -> str | None:
    """The method gunicorn's parser had read from the request line when it failed (the request
    it was building is on the failing stack), if it looks like one."""
    trace, method = error.__traceback__, None
    while trace is not None:
        parsing = trace.tb_frame.f_locals.get("self")
        if isinstance(parsing, Request) and isinstance(parsing.method, str):
            method = parsing.method
        trace = trace.tb_next
    return method if method and _PLAIN_METHOD.fullmatch(method) else None
