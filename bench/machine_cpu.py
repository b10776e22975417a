"""The machine's CPU during a phase of a benchmark, process by process, read from /proc: what
PostgreSQL, gunicorn's workers and the bench's own load-generating processes each spent.

Why: on these shared two-core machines a phase's rate moves by up to 40 % between runs of one
tree, while the CPU each process spends per checkout moves far less; the issue's ratio (app ÷
floor) is, with both phases using the two cores whole, the machine's CPU per checkout of the one
against the other's. PostgreSQL's and gunicorn's processes are read ten times a second (new ones
looked for twice a second) and each one's last reading counts, so one that ends during the
phase (a floor register's backend) loses at most a tenth of a second; the load generator's
processes are the bench's own children, counted exactly once they are reaped.
"""
from __future__ import annotations

import os
import resource
import threading

TICKS = os.sysconf("SC_CLK_TCK")
KINDS = ("postgresql", "gunicorn", "registers")
LOOK_FOR_NEW = 5  # readings between two looks for new processes


def _kind(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            command = file.read()
    except OSError:
        return None
    if command.startswith(b"postgres"):
        return "postgresql"
    if b"gunicorn" in command:  # the master and its workers (forks: the same command line)
        return "gunicorn"
    return None


def _ticks(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def _children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class MachineCpu:
    """`with MachineCpu() as cpu:` around a phase whose load generator's processes are reaped
    inside it; then `cpu.seconds` by kind."""

    def __init__(self, every: float = 0.1):
        self.every = every
        self.first: dict[str, tuple[str, int]] = {}  # pid → (kind, ticks at the phase's start)
        self.last: dict[str, int] = {}
        self.started = False
        self.children = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _look_for_new(self) -> None:
        for pid in os.listdir("/proc"):
            if pid.isdigit() and pid not in self.first:
                kind, ticks = _kind(pid), _ticks(pid)
                if kind is not None and ticks is not None:
                    # One first seen after the phase began was born in it: all its CPU counts.
                    self.first[pid] = (kind, 0 if self.started else ticks)
                    self.last[pid] = ticks

    def _read(self) -> None:
        for pid in self.first:
            ticks = _ticks(pid)
            if ticks is not None:
                self.last[pid] = ticks

    def _watch(self) -> None:
        readings = 0
        while not self._stop.wait(self.every):
            readings += 1
            if readings % LOOK_FOR_NEW == 0:
                self._look_for_new()
            self._read()

    def __enter__(self) -> "MachineCpu":
        self._look_for_new()
        self.started = True
        self.children = _children_seconds()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._read()
        self.children = _children_seconds() - self.children

    @property
    def seconds(self) -> dict[str, float]:
        spent = dict.fromkeys(KINDS, 0.0)
        for pid, (kind, first) in self.first.items():
            spent[kind] += (self.last[pid] - first) / TICKS
        spent["registers"] = self.children
        return spent

    def per_checkout_ms(self, checkouts: int) -> dict[str, float]:
        """Each kind's CPU a checkout, and the machine's (their sum), in ms."""
        if not checkouts:
            return {}
        spent = {kind: round(seconds * 1000 / checkouts, 2)
                 for kind, seconds in self.seconds.items()}
        return spent | {"machine": round(sum(spent.values()), 2)}
