"""The service's own PostgreSQL and Redis, throwaway, on free ports, so a scenario may kill
and restart them at will.

PostgreSQL runs from the machine's packages (`initdb`, `pg_ctl`); both refuse to run as root,
so as root they run as the `postgres` user, in a directory given to it.
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from testbed.ports import free_port

PG_ROOTS = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)


def missing_programs() -> list[str]:
    """What the machine lacks to run the throwaway services."""
    missing = [] if PG_ROOTS else ["PostgreSQL's initdb/pg_ctl (/usr/lib/postgresql/*/bin)"]
    if shutil.which("redis-server") is None:
        missing.append("redis-server")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        missing.append("runuser (to run PostgreSQL as the postgres user)")
    return missing


def wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on port {port} after {timeout} s")
            time.sleep(0.05)


class ThrowawayPostgres:
    """A cluster in a temporary directory, trust authentication, listening on 127.0.0.1 only."""

    def __init__(self, directory: Path, settings: dict[str, str] | None = None):
        """`settings`: more server settings (`-c name=value`), e.g. a preloaded library."""
        self.directory = directory
        self.data = directory / "data"
        self.log = directory / "postgres.log"
        self.port = free_port()
        self.bin = Path(PG_ROOTS[0])
        self._as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_owner:
            shutil.chown(directory, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8", "--locale=C.UTF-8")
        self._options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} "
                         f"-c unix_socket_directories={directory} -c fsync=off"
                         + "".join(f" -c {name}={value}"
                                   for name, value in (settings or {}).items()))

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str, timeout: float = 60) -> None:
        subprocess.run([*self._as_owner, str(self.bin / program), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)

    def _pg_ctl(self, action: str, *args: str) -> None:
        self._run("pg_ctl", action, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                  "-o", self._options, *args, timeout=90)

    def start(self) -> None:
        self._pg_ctl("start")

    def restart(self, mode: str) -> None:
        """`pg_ctl restart -m MODE`: returns once the server accepts connections again."""
        self._pg_ctl("restart", "-m", mode)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w", timeout=60)


class ThrowawayRedis:
    """redis-server on a free port, nothing persisted: a restart forgets every queued job."""

    def __init__(self, directory: Path):
        self.port = free_port()
        self.log = directory / "redis.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--daemonize", "no"], stdout=log, stderr=log)
        wait_for_port(self.port, 20)

    def kill(self) -> None:
        """SIGKILL: no goodbye to the clients, and the queue is lost."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
