"""The Procfile's lines run as a platform runs them: `bash -c LINE` in the repository, the
virtualenv's programs first on PATH, every setting from the environment."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def procfile_lines(path: Path = ROOT / "Procfile") -> dict[str, str]:
    lines = {}
    for raw in path.read_text().splitlines():
        if raw.strip() and not raw.lstrip().startswith("#"):
            name, command = raw.split(":", 1)
            lines[name.strip()] = command.strip()
    return lines


def process_environment(settings: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(settings)
    return env


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


class ProcfileProcess:
    """One Procfile line, started in a process group of its own, its output in a log file."""

    def __init__(self, name: str, command: str, env: dict[str, str], log_dir: Path):
        self.name = name
        self.command = command
        self.env = env
        self.log = log_dir / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> "ProcfileProcess":
        with open(self.log, "ab") as log:
            log.write(f"--- started {time.strftime('%H:%M:%S')}: {self.command}\n".encode())
            log.flush()
            self.process = subprocess.Popen(["bash", "-c", self.command], cwd=ROOT, env=self.env,
                                            stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        """The line's own process: bash's single command replaces bash (or is its only child)."""
        assert self.process is not None
        shell = self.process.pid
        deadline = time.monotonic() + 10
        # Right after the start, bash may not have replaced itself (or forked) yet.
        while Path(f"/proc/{shell}/cmdline").read_bytes().split(b"\0")[0].endswith(b"bash"):
            if children(shell):
                return children(shell)[0]
            assert time.monotonic() < deadline, f"`{self.command}` never started"
            time.sleep(0.01)
        return shell

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        """To the whole group, as a supervisor stopping the line does."""
        os.killpg(self.process.pid, signum)

    def wait(self, timeout: float) -> int | None:
        """The exit status, or None when still running after `timeout` seconds."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """Leave nothing behind, whatever state it is in."""
        if self.process is None:
            return
        for signum, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, signum)
            except ProcessLookupError:
                break
            if self.wait(grace) is not None:
                try:  # the group may outlive its leader
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                break

    def tail(self, lines: int = 25) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def run_line(command: str, env: dict[str, str], timeout: float = 120) -> str:
    """A one-off line (release, an operator command): its output; fails on a non-zero exit."""
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=timeout)
    if result.returncode:
        raise RuntimeError(f"`{command}` exited {result.returncode}:\n{result.stdout}\n"
                           f"{result.stderr}")
    return result.stdout


def holding_connections(pids: list[int], local_ports: set[int],
                        remote_ports: set[int] | None = None) -> list[int]:
    """Which of `pids` hold a TCP socket bound to one of `local_ports` on this host, connected to
    one of `remote_ports` if given (read from /proc: a socket's inode in the process's
    descriptors, its ports in /proc/net/tcp; a socket its process closed is left there with
    inode 0 while TCP finishes with it, held by none)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if (int(fields[1].rsplit(":", 1)[1], 16) in local_ports
                    and (remote_ports is None
                         or int(fields[2].rsplit(":", 1)[1], 16) in remote_ports)):
                inodes.add(f"socket:[{fields[9]}]")
    holding = []
    for pid in pids:
        try:
            held = {os.readlink(entry) for entry in Path(f"/proc/{pid}/fd").iterdir()}
        except OSError:
            continue
        if held & inodes:
            holding.append(pid)
    return holding
