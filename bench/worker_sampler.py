"""A gunicorn config that samples each worker's stack on a timer of its own CPU time, for
where a served checkout's CPU goes, gunicorn's part of it included:

    WORKER_SAMPLES=/tmp/samples BENCH_GUNICORN_CONFIG=bench/worker_sampler.py \\
        .venv/bin/python bench/checkout.py --registers 16 --skip floor,hot,paused --seconds 30
    .venv/bin/python bench/register_cpu.py --classify-workers /tmp/samples

The bench's gunicorn takes its options from the command line, the rest from this file: the
Procfile's settings (app/serving.py) and the sampler's hooks. Each worker writes its stacks,
outermost frame first, one line per stack with its count, to WORKER_SAMPLES/<pid>.txt when it
exits. py-spy samples a worker from outside and counts a wait inside a C call (psycopg2's for
PostgreSQL) as running; this timer runs only while the process uses the CPU, so waits are left
out and the C work of a call, the kernel's included, is counted in the Python frame that made
it. The timer's handler runs in a process's main thread: it sees the Procfile's worker of one
thread, which serves in its loop, or a sync worker; with WEB_THREADS above one the requests are
served by other threads, and py-spy's `--gil` samples (`register_cpu.py --classify`) see them."""
import os
import signal
from collections import Counter

from app.serving import *  # noqa: F401,F403  (the Procfile's settings and hooks)

_samples: Counter = Counter()
INTERVAL = 0.001  # seconds of the worker's CPU between samples


def _sample(signum, frame):
    stack = []
    while frame is not None:
        stack.append(f"{frame.f_code.co_name} ({frame.f_code.co_filename})")
        frame = frame.f_back
    _samples[";".join(reversed(stack))] += 1


def post_fork(server, worker):
    signal.signal(signal.SIGPROF, _sample)
    signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)


def worker_exit(server, worker):
    signal.setitimer(signal.ITIMER_PROF, 0, 0)
    directory = os.environ["WORKER_SAMPLES"]
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{os.getpid()}.txt"), "w") as written:
        written.writelines(f"{stack} {count}\n" for stack, count in _samples.items())
