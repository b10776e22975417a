"""A real PgBouncer in transaction pooling, its defaults otherwise, in front of the test
server, and databases whose own time zone is not UTC (docs/api.md#limits).

`make test`'s PostgreSQL pass runs the suite (but tests/deployed/) a second time with
TEST_THROUGH_PGBOUNCER=1: the suite's database is then one of these, and the app reaches it
through one of these PgBouncers (tests/conftest.py); tests/pooling/ runs only then.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from testbed.ports import free_port

PGBOUNCER = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer"
                                          if os.access("/usr/sbin/pgbouncer", os.X_OK) else None)
# Far from UTC, with minutes in its offset and no daylight saving: nothing passes by chance.
DATABASE_ZONE = "Asia/Kathmandu"


def set_own_time_zone(server_url: str, database: str, zone: str = DATABASE_ZONE) -> None:
    """The database's own time zone, which every session on it starts in."""
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"ALTER DATABASE \"{database}\" SET timezone TO '{zone}'"))
    admin.dispose()


def _config(folder: Path, server_url: str, port: int) -> Path:
    server = make_url(server_url)
    (folder / "userlist.txt").write_text(f'"{server.username}" "{server.password or ""}"\n')
    lines = [
        "[databases]",
        # Every database name a client asks for, on the test server.
        f"* = host={server.host or '127.0.0.1'} port={server.port or 5432}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = trust",
        f"auth_file = {folder / 'userlist.txt'}",
        "pool_mode = transaction",
    ]
    if os.geteuid() == 0:  # PgBouncer will not run as root
        lines.append("user = postgres")
    ini = folder / "pgbouncer.ini"
    ini.write_text("\n".join(lines) + "\n")
    return ini


@contextmanager
def running_pgbouncer(server_url: str):
    """A PgBouncer (pool_mode = transaction) on a free port for the server of `server_url`;
    yields a function that turns a database name into its URL through the bouncer."""
    folder = Path(tempfile.mkdtemp(prefix="loyalty-pgbouncer-"))
    folder.chmod(0o755)  # readable by the user it switches to
    port = free_port()
    ini = _config(folder, server_url, port)
    log = (folder / "pgbouncer.log").open("wb")
    process = subprocess.Popen([PGBOUNCER, str(ini)], stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(port, process, folder / "pgbouncer.log")
        through = make_url(server_url).set(host="127.0.0.1", port=port)
        yield lambda database: through.set(database=database).render_as_string(
            hide_password=False)
    finally:
        process.terminate()
        process.wait(10)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_for(port: int, process: subprocess.Popen, log: Path) -> None:
    for _ in range(100):
        if process.poll() is not None:
            raise RuntimeError(f"pgbouncer exited: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"pgbouncer did not listen on {port}: {log.read_text()}")
