"""The web's gunicorn worker (app.serving): gunicorn's threaded worker (gthread: each
connection kept open between requests while its client keeps it, watched by the worker's loop),
which

- with one thread (WEB_THREADS=1, the Procfile's), serves each request in that loop, where
  gthread hands it to a pool thread and the answer back: a wakeup of each and their turns at
  the interpreter, on every request. A new connection's first bytes are awaited by the loop's
  selector, so a client that connects and says nothing holds up no other; a request that has
  begun is read to its end with the loop waiting, as gunicorn's sync worker does (nginx sends
  an instance whole requests), and the arbiter's timeout is over each request again, counted
  from the last part of its answer written (app/serving_heartbeat.py). A connection closed
  after its answer waits in the selector for the client to close too, and pipelined requests
  are handed back to the loop one by one: both were gunicorn's to do in a blocking wait and in
  a recursion (WebWorker.close_when_client_has, enqueue_req);
- reads gunicorn's settings once, as it starts serving, and gives the arbiter its heartbeat
  once a second rather than each time its loop wakes (SettledConfig, WebWorker.notify): both
  were paid on every request;
- tells of a request it cannot parse by the error's name and method (app/serving_log.py,
  with the logger that builds no access line);
- on a graceful stop, answers every connection already made to it before it exits
  (app/serving_stop.py)."""
from __future__ import annotations

import selectors
import socket
import time
from collections import deque
from functools import partial

from gunicorn import util
from gunicorn.http.errors import ParseException
from gunicorn.workers.gthread import DEFAULT_WORKER_DATA_TIMEOUT, ThreadWorker

from app.serving_heartbeat import BeatingWhileWriting
from app.serving_log import told_by_name
from app.serving_stop import answer_what_is_queued

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
            exc = told_by_name(exc)
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
            self.wsgi = BeatingWhileWriting(self.wsgi, self.notify)

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
            answer_what_is_queued(self)
        super().set_accept_enabled(enabled)
        if stopping:
            for listener in self.sockets:
                listener.close()


class _Served:
    """A request served in the loop, as `finish_request` reads a pool thread's future: its
    answer whether to keep the connection (a Future would make a lock a request)."""

    def __init__(self, keep):
        self._keep = keep

    def cancelled(self) -> bool:
        return False

    def result(self):
        return self._keep


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
