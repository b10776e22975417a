"""The web's gunicorn worker: gunicorn's sync worker, which on a graceful stop answers every
connection already made to it before it exits.

gunicorn's own sync worker stops accepting at SIGTERM and exits once its request is done. The
listening socket stays open in the workers until the last one exits, so the kernel goes on
completing connections into its queue meanwhile, and they are reset when it closes: behind
nginx, each is a request that was already sent (nginx never resends a POST) and answers 502.
This worker takes what is queued, answers it, and closes its socket as soon as the queue is
empty; once every worker has, new connections are refused, and nginx sends those to the next
instance."""
from __future__ import annotations

import errno

from gunicorn.workers.sync import SyncWorker

_QUEUE_EMPTY = (errno.EAGAIN, errno.EWOULDBLOCK)


class DrainingSyncWorker(SyncWorker):

    def run(self):
        super().run()
        self.answer_what_is_queued()

    def answer_what_is_queued(self) -> None:
        for listener in self.sockets:
            while True:
                self.notify()
                try:
                    self.accept(listener)
                except OSError as error:
                    if error.errno in _QUEUE_EMPTY:
                        break
                    if error.errno != errno.ECONNABORTED:  # that one gone: take the next
                        raise
            listener.close()
