"""The heartbeat a worker of one thread gives the arbiter while it writes an answer
(WebWorker.load_wsgi wraps the app in it)."""
from __future__ import annotations

from gunicorn.http.wsgi import FileWrapper


class BeatingWhileWriting:
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
