"""The fleet of docs/api.md#limits in miniature, with the files of deploy/ as an operator installs
them: nginx in front of two web instances, two workers, PgBouncer in transaction mode in front
of a PostgreSQL whose database is not in UTC. Only what belongs to this machine is changed in
those files (ports, paths, the database's address, trust authentication); every setting that
shapes behaviour is the file's own."""
from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import requests

from testbed.backing_services import wait_for_port
from testbed.deployment import UPKEEP_SECONDS, Deployment
from testbed.ports import free_port
from testbed.procfile import ROOT, ProcfileProcess, process_environment, run_line
from testbed.registers import Api, open_shop

DEPLOY = ROOT / "deploy"
DATABASE = "loyalty"
DATABASE_ZONE = "Asia/Kathmandu"  # +05:45: no whole-hour mistake can hide in it


def missing_fleet_programs() -> list[str]:
    return [program for program in ("nginx", "pgbouncer")
            if shutil.which(program) is None and not Path(f"/usr/sbin/{program}").exists()]


def _program(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _as_postgres() -> list[str]:
    """PgBouncer, like PostgreSQL, refuses to run as root."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


class ThrowawayPgBouncer:
    """deploy/pgbouncer/pgbouncer.ini, pointed at the throwaway PostgreSQL."""

    def __init__(self, directory: Path, postgres_port: int, database: str = DATABASE):
        self.directory = directory / "pgbouncer"
        self.database = database
        self.directory.mkdir()
        self.port = free_port()
        config = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
        config.read(DEPLOY / "pgbouncer" / "pgbouncer.ini")
        assert config["pgbouncer"]["pool_mode"] == "transaction"
        config["databases"] = {database: f"host=127.0.0.1 port={postgres_port} dbname={database}"}
        config["pgbouncer"].update({
            "listen_addr": "127.0.0.1", "listen_port": str(self.port),
            # The throwaway PostgreSQL trusts every local user; PgBouncer then only checks the
            # name is listed.
            "auth_type": "trust", "auth_file": str(self.directory / "userlist.txt"),
            "logfile": str(self.directory / "pgbouncer.log"),
            "pidfile": str(self.directory / "pgbouncer.pid"),
            "unix_socket_dir": str(self.directory)})
        (self.directory / "userlist.txt").write_text('"postgres" ""\n')
        self.ini = self.directory / "pgbouncer.ini"
        with self.ini.open("w") as out:
            config.write(out)
        if _as_postgres():
            shutil.chown(self.directory, "postgres", "postgres")
            for path in self.directory.iterdir():
                shutil.chown(path, "postgres", "postgres")
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{self.database}"

    def start(self) -> None:
        self.process = subprocess.Popen([*_as_postgres(), _program("pgbouncer"), str(self.ini)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, 20)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class ThrowawayNginx:
    """deploy/nginx/loyalty.conf, listening on a free port, its upstream the web instances."""

    def __init__(self, directory: Path, web_ports: list[int]):
        self.directory = directory / "nginx"
        self.directory.mkdir()
        # nginx's workers run as nobody and write bodies here (one over its 16 KB buffer)
        directory.chmod(directory.stat().st_mode | 0o011)
        self.directory.chmod(0o777)
        self.port = free_port()
        site = (DEPLOY / "nginx" / "loyalty.conf").read_text()
        site, listens = re.subn(r"(?m)^(\s*)listen 80;", rf"\1listen 127.0.0.1:{self.port};", site)
        servers = iter(web_ports)
        site, instances = re.subn(r"(?m)^(\s*server )127\.0\.0\.1:\d+",
                                  lambda m: f"{m.group(1)}127.0.0.1:{next(servers)}", site)
        assert (listens, instances) == (1, len(web_ports)), "deploy/nginx/loyalty.conf changed shape"
        (self.directory / "loyalty.conf").write_text(site)
        temp = self.directory / "temp"
        temp.mkdir(mode=0o777)
        temp.chmod(0o777)
        self.conf = self.directory / "nginx.conf"
        self.conf.write_text(
            f"worker_processes 1;\npid {self.directory}/nginx.pid;\n"
            f"error_log {self.directory}/error.log;\nevents {{ worker_connections 1024; }}\n"
            f"http {{\n  access_log off;\n  client_body_temp_path {temp}/body;\n"
            f"  proxy_temp_path {temp}/proxy;\n  include {self.directory}/loyalty.conf;\n}}\n")
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def errors(self) -> str:
        log = self.directory / "error.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def start(self) -> None:
        with open(self.directory / "nginx.out", "ab") as output:
            self.process = subprocess.Popen(
                [_program("nginx"), "-c", str(self.conf), "-p", str(self.directory),
                 "-g", "daemon off;"], stdout=output, stderr=output)
        wait_for_port(self.port, 20)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class Fleet(Deployment):
    """Two of each web instance and worker; `self.api` speaks to nginx."""

    def start(self, registers: int = 4, **settings: str) -> "Fleet":
        from testbed.procfile import procfile_lines

        self.lines = procfile_lines()
        self.start_postgres()
        self.query_as_admin(f"CREATE DATABASE {DATABASE}")
        self.query_as_admin(f"ALTER DATABASE {DATABASE} SET timezone TO '{DATABASE_ZONE}'")
        self.pgbouncer = ThrowawayPgBouncer(self.directory, self.postgres.port)
        self.pgbouncer.start()
        self._cleanup.callback(self.pgbouncer.stop)
        self.start_redis_and_receiver()
        self.web_ports = [free_port(), free_port()]
        self.nginx = ThrowawayNginx(self.directory, self.web_ports)
        self.settings = {
            "DATABASE_URL": self.pgbouncer.url, "REDIS_URL": self.redis.url,
            "API_KEY_PEPPER": "fleet-pepper", "WEB_CONCURRENCY": "2",
            "PUBLIC_BASE_URL": self.nginx.url,
            "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1", "WEBHOOK_CA_BUNDLE": self.receiver.ca_bundle,
            "WEBHOOK_RETRY_SCHEDULE": "1,1,2,2,2,5,5,5,10,10",
            "UPKEEP_INTERVAL_SECONDS": str(UPKEEP_SECONDS),
            "RQ_QUEUE": f"fleet-{uuid.uuid4().hex[:8]}", "LOG_LEVEL": "INFO", **settings,
        }
        self.env = process_environment(self.settings)
        run_line(self.lines["release"], self.env)
        self.webs = [self.start_instance(index) for index in range(2)]
        self.workers = [self._line("worker", name=f"worker-{index}") for index in range(2)]
        self.nginx.start()
        self._cleanup.callback(self.nginx.stop)
        self.company_id = self.flask("companies", "create", "Fleet Shop", "--register-limit", "20")
        key = self.flask("credentials", "issue", self.company_id, "--name", "registers",
                         "--all-scopes")
        self.flask("webhooks", "allow-host", "localhost")
        self.api = Api(self.nginx.url, key)
        *self.registers, self.spare = open_shop(self.api, registers + 1, self.receiver.url())
        return self

    # --- processes -------------------------------------------------------------------------

    def _line(self, line: str, name: str | None = None, **settings: str) -> ProcfileProcess:
        env = dict(self.env, **settings)
        process = ProcfileProcess(name or line, self.lines[line], env, self.directory).start()
        self._cleanup.callback(process.stop)
        return process

    def start_instance(self, index: int) -> ProcfileProcess:
        """Web instance `index` on its port; returns once it answers there."""
        port = self.web_ports[index]
        web = self._line("web", name=f"web-{index}", PORT=str(port))
        deadline = time.monotonic() + 60
        while True:
            assert web.running(), "web exited:\n" + web.tail()
            try:
                if requests.get(f"http://127.0.0.1:{port}/ready", timeout=5).ok:
                    return web
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "web did not serve:\n" + web.tail()
            time.sleep(0.1)

    def restart_instance(self, index: int, signum: int) -> None:
        """Stopped by `signum` (the whole group, as a supervisor does), waited for, started."""
        self.webs[index].signal(signum)
        assert self.webs[index].wait(60) is not None, "the instance did not stop"
        self.webs[index] = self.start_instance(index)

    # --- reading the database ------------------------------------------------------------------

    def query_as_admin(self, sql: str) -> None:
        import psycopg2

        connection = psycopg2.connect(self.postgres.url, connect_timeout=5)
        connection.autocommit = True
        try:
            connection.cursor().execute(sql)
        finally:
            connection.close()

    @property
    def database_url(self) -> str:
        """Around PgBouncer: the checks' own view."""
        return self.postgres.url.rsplit("/", 1)[0] + f"/{DATABASE}"

    def execute(self, sql: str, *params) -> None:
        """Arrange what only time would bring (a birthday come due), straight in PostgreSQL."""
        import psycopg2

        connection = psycopg2.connect(self.database_url, connect_timeout=5)
        try:
            with connection, connection.cursor() as cursor:
                cursor.execute(sql, params)
        finally:
            connection.close()

    def logs(self) -> str:
        processes = [*self.__dict__.get("webs", []), *self.__dict__.get("workers", [])]
        return "\n\n".join(f"--- {p.log.name}\n{p.tail()}" for p in processes) + \
            "\n\n--- nginx errors\n" + "\n".join(self.nginx.errors().splitlines()[-20:])
