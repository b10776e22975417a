"""A web worker's graceful stop answers every connection already made to it before it exits
(docs/api.md#limits; WebWorker.set_accept_enabled calls this at the stop).

gunicorn's own worker stops accepting at SIGTERM and exits once the connections it holds are
done. The listening socket stays open in the workers until the last one exits, so the kernel
goes on completing connections into its queue meanwhile, and they are reset when it closes:
behind nginx, each is a request already sent (nginx never resends a POST), answered 502. The
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
import select
import socket
import struct

SO_ATTACH_FILTER = getattr(socket, "SO_ATTACH_FILTER", 26)  # Linux's
# A classic BPF program of one instruction, BPF_RET | BPF_K with k = 0: keep no byte of any packet.
_DROP_EVERY_PACKET = struct.pack("HBBI", 0x06, 0, 0, 0)


def answer_what_is_queued(worker) -> None:
    """Accept every connection the kernel completed to `worker`'s listening sockets, for it
    to answer before it exits (gunicorn's stop waits for the connections it holds). A listening
    socket is readable while its queue holds one; gunicorn's `accept` takes it."""
    for listener in worker.sockets:
        if instance_stopping(listener):
            take_no_new_connections(listener)
        listener.setblocking(False)  # a connection gone meanwhile must not block `accept`
        queued = select.poll()  # not select.select: it fails on descriptors past 1024
        queued.register(listener.fileno(), select.POLLIN)
        while queued.poll(0):
            worker.accept(listener)


def instance_stopping(listener) -> bool:
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


def take_no_new_connections(listener) -> None:
    """From now on the listening socket drops every packet it is sent: no new connection is
    completed, while those already made (in the queue, with sockets of their own) are answered.
    Where the kernel refuses the filter, the socket is closed as before, race and all."""
    program = ctypes.create_string_buffer(_DROP_EVERY_PACKET)
    try:
        listener.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER,
                            struct.pack("HP", 1, ctypes.addressof(program)))
    except OSError:
        pass
