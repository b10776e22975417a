"""The CPU that processes spend during a phase of a benchmark, read from /proc.

`CpuMeter` follows a changing set of processes (bench/fleet.py's web instances, nginx,
PgBouncer, the database's backends). `MachineCpu` is what bench/checkout.py reports for each
phase: what PostgreSQL, gunicorn and the bench's own load-generating processes spent.

Why: on these shared two-core machines a phase's rate moves by up to 40 % between runs of one
tree; with both phases using the two cores whole, the issue's ratio (app ÷ floor) is the
floor's machine CPU a checkout over the app's, and the workers' CPU against PostgreSQL's in the
same phase moves least of all.
"""
from __future__ import annotations

import os
import resource
import threading
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15 of proc(5)


class CpuMeter:
    """CPU seconds spent by a changing set of processes between start() and stop(): a process
    first seen after start() was born during the run and counts from zero; one that ends
    keeps its last sample."""

    def __init__(self, pids):
        self.pids = pids  # called for the current set
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}

    def start(self) -> None:
        self.first = {pid: cpu for pid in self.pids() if (cpu := cpu_seconds(pid)) is not None}
        self.last = dict(self.first)

    def sample(self) -> None:
        for pid in self.pids():
            cpu = cpu_seconds(pid)
            if cpu is not None:
                self.last[pid] = cpu

    def spent(self) -> float:
        self.sample()
        return sum(cpu - self.first.get(pid, 0.0) for pid, cpu in self.last.items())


def processes_running(matches) -> list[int]:
    """The processes whose command line (its NUL-separated arguments) `matches`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if matches(Path(f"/proc/{entry}/cmdline").read_bytes()):
                    found.append(int(entry))
            except OSError:
                pass
    return found


def is_postgresql(command: bytes) -> bool:
    """The server and its backends: "/usr/lib/postgresql/15/bin/postgres -D …", "postgres: …"."""
    program = command.split(b"\0", 1)[0]
    return program.startswith(b"postgres") or program.endswith(b"/bin/postgres")


def is_gunicorn(command: bytes) -> bool:
    """The web server's processes: gunicorn's, or granian's when a bench serves the app with it
    (`checkout.py --against granian`); each server's workers carry its master's command line."""
    return b"gunicorn" in command or b"granian" in command


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CpuSpent:
    """What each kind of process spent, in seconds: one phase's, or several added up (a kind
    of load measured in turns with another: bench/checkout.py --turns)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def add(self, other: CpuSpent) -> None:
        for kind, seconds in other.seconds.items():
            self.seconds[kind] = self.seconds.get(kind, 0.0) + seconds

    def per_checkout_ms(self, checkouts: int) -> dict[str, float]:
        """Each kind's CPU a checkout, and the machine's (their sum), in ms."""
        if not checkouts:
            return {}
        spent = {kind: round(seconds * 1000 / checkouts, 2)
                 for kind, seconds in self.seconds.items()}
        return spent | {"machine": round(sum(spent.values()), 2)}


class MachineCpu(CpuSpent):
    """`with MachineCpu() as cpu:` around a phase whose load generator's processes are reaped
    inside it. PostgreSQL and gunicorn are sampled four times a second (a backend that ends
    with the phase loses at most a quarter of a second); the load generator's processes, the
    bench's own children, are counted exactly once reaped."""

    def __init__(self, every: float = 0.25):
        super().__init__()
        self.every = every
        self.meters = {"postgresql": CpuMeter(lambda: processes_running(is_postgresql)),
                       "gunicorn": CpuMeter(lambda: processes_running(is_gunicorn))}
        self.children = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(self.every):
            for meter in self.meters.values():
                meter.sample()

    def __enter__(self) -> "MachineCpu":
        for meter in self.meters.values():
            meter.start()
        self.children = _children_seconds()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.seconds = {name: meter.spent() for name, meter in self.meters.items()}
        self.seconds["registers"] = _children_seconds() - self.children
