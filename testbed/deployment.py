"""The service as deployed, in miniature: its own PostgreSQL and Redis, the Procfile's
release, web and worker, a tenant set up by the operator's commands and the public API, and
the tenant's HTTPS webhook receiver."""
from __future__ import annotations

import shlex
import shutil
import tempfile
import time
import uuid
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psycopg2
import requests
from redis import Redis
from rq import Queue, Worker

from testbed.backing_services import ThrowawayPostgres, ThrowawayRedis
from testbed.ports import free_port
from testbed.procfile import (ProcfileProcess, holding_connections, process_environment,
                              procfile_lines, run_line)
from testbed.receiver import WebhookReceiver
from testbed.registers import Api, open_shop

UPKEEP_SECONDS = 2


class Deployment:
    """Build with `start()` inside try/finally `close()`: whatever was started is stopped,
    however far the start got."""

    def __init__(self):
        self._cleanup = ExitStack()
        self.directory = Path(tempfile.mkdtemp(prefix="loyalty-deployed-"))
        self._cleanup.callback(shutil.rmtree, self.directory, ignore_errors=True)
        self.notes: dict = {}  # what one scenario leaves for a later one to check

    def start(self, registers: int = 4, **settings: str) -> "Deployment":
        """`settings` replace the harness's own (e.g. UPKEEP_INTERVAL_SECONDS)."""
        self.lines = procfile_lines()
        self.start_postgres()
        self.start_redis_and_receiver()
        self.port = free_port()
        self.settings = {
            "DATABASE_URL": self.postgres.url, "REDIS_URL": self.redis.url,
            "API_KEY_PEPPER": "deployed-pepper", "PORT": str(self.port), "WEB_CONCURRENCY": "2",
            "PUBLIC_BASE_URL": f"http://127.0.0.1:{self.port}",
            "WEBHOOK_ALLOW_PRIVATE_ADDRESSES": "1", "WEBHOOK_CA_BUNDLE": self.receiver.ca_bundle,
            "WEBHOOK_RETRY_SCHEDULE": "1,1,2,2,2,5,5,5,10,10",
            "UPKEEP_INTERVAL_SECONDS": str(UPKEEP_SECONDS),
            "RQ_QUEUE": f"deployed-{uuid.uuid4().hex[:8]}", "LOG_LEVEL": "INFO",
            # Counted in this Redis, killed and restarted with the rest, but never refusing the
            # registers' stream, which all share one key.
            "API_RATE_LIMIT": "100000/minute", **settings,
        }
        self.env = process_environment(self.settings)
        run_line(self.lines["release"], self.env)
        self.web = self._line("web")
        self.worker = self._line("worker")
        self.wait_until_serving()
        self.company_id = self.flask("companies", "create", "Deployed Shop",
                                     "--register-limit", "10")
        key = self.flask("credentials", "issue", self.company_id, "--name", "registers",
                         "--all-scopes")
        self.flask("webhooks", "allow-host", "localhost")
        self.api = Api(f"http://127.0.0.1:{self.port}", key)
        # The streams' registers, and one more for the scenarios' own holds and adjustments,
        # whose customer no stream touches.
        *self.registers, self.spare = open_shop(self.api, registers + 1, self.receiver.url())
        # Holds short enough for the periodic upkeep to expire one within a scenario. After the
        # shop's webhook endpoint exists: its program.updated is one more event to deliver.
        self.flask("programs", "set", self.company_id, "--hold-ttl-seconds", "30")
        self.wait_until_listening()
        return self

    def start_postgres(self) -> None:
        self.postgres = ThrowawayPostgres(self.directory)
        self.postgres.start()
        self._cleanup.callback(self.postgres.stop)

    def start_redis_and_receiver(self) -> None:
        """The deployment's own Redis, and the tenant's HTTPS webhook receiver."""
        self.redis = ThrowawayRedis(self.directory)
        self.redis.start()
        self._cleanup.callback(self.redis.kill)
        self.receiver = WebhookReceiver(self.directory)
        self._cleanup.callback(self.receiver.close)

    def _line(self, name: str, **settings: str) -> ProcfileProcess:
        env = dict(self.env, **settings)
        process = ProcfileProcess(name, self.lines[name], env, self.directory).start()
        self._cleanup.callback(process.stop)
        return process

    def flask(self, *args: str) -> str:
        """An operator command (`flask --app wsgi …`); its last line."""
        command = "flask --app wsgi " + " ".join(shlex.quote(a) for a in args)
        return run_line(command, self.env).strip().splitlines()[-1]

    def start_web(self) -> ProcfileProcess:
        self.web = self._line("web")
        self.wait_until_serving()
        return self.web

    def start_worker(self, **settings: str) -> ProcfileProcess:
        self.worker = self._line("worker", **settings)
        self.wait_until_listening()
        return self.worker

    def wait_until_serving(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.web.running(), "web exited:\n" + self.web.tail()
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/health", timeout=5).ok:
                    return
            except requests.RequestException:  # not listening yet, or its workers booting
                pass
            assert time.monotonic() < deadline, "web did not serve:\n" + self.web.tail()
            time.sleep(0.1)

    def wait_until_listening(self, timeout: float = 60) -> None:
        """Until the worker has registered with RQ on the deployment's queue."""
        redis = Redis.from_url(self.redis.url)
        queue = Queue(self.settings["RQ_QUEUE"], connection=redis)
        deadline = time.monotonic() + timeout
        try:
            while not any(w.pid == self.worker.pid for w in Worker.all(queue=queue)):
                assert self.worker.running(), "worker exited:\n" + self.worker.tail()
                assert time.monotonic() < deadline, "worker did not start:\n" + self.worker.tail()
                time.sleep(0.1)
        finally:
            redis.close()

    @property
    def database_url(self) -> str:
        """The service's database on PostgreSQL itself (never through a pooler)."""
        return self.postgres.url

    def query(self, sql: str, *params) -> list[tuple]:
        """Read the service's database directly, in UTC, to check what the API says."""
        connection = psycopg2.connect(self.database_url, connect_timeout=5,
                                      options="-c timezone=UTC")
        try:
            with connection, connection.cursor() as cursor:
                cursor.execute(sql, params)
                return cursor.fetchall()
        finally:
            connection.close()

    @contextmanager
    def accounts_locked(self, customer_ids: list[str]):
        """The customers' reward accounts row-locked here: a hold or commit for them waits,
        in flight, until the block ends."""
        connection = psycopg2.connect(self.database_url, connect_timeout=5)
        try:
            connection.cursor().execute(
                "SELECT 1 FROM reward_accounts WHERE company_id = %s AND customer_id = ANY(%s)"
                " FOR UPDATE", (self.company_id, customer_ids))
            yield
        finally:
            connection.rollback()
            connection.close()

    def wait_for_lock_waiters(self, count: int, timeout: float = 30) -> None:
        """Until `count` database sessions wait on a lock (requests held in flight)."""
        waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        deadline = time.monotonic() + timeout
        while self.query(waiting)[0][0] < count:
            assert time.monotonic() < deadline, f"{count} requests never waited on the locks"
            time.sleep(0.05)

    def web_processes_waiting_on_locks(self, pids: list[int]) -> list[int]:
        """Which of `pids` (web processes) have a request whose statement waits on a lock: a
        thread of theirs holds the session's connection (its client port)."""
        ports = {port for (port,) in self.query(
            "SELECT client_port FROM pg_stat_activity WHERE wait_event_type = 'Lock'")}
        return holding_connections(pids, ports)

    def recorded_events(self) -> dict[str, str]:
        """Every event in the outbox: id → type."""
        return dict(self.query("SELECT id, type FROM outbox_events WHERE company_id = %s",
                               self.company_id))

    def sales_of(self, prefix: str) -> dict[str, str]:
        """The committed sales of the receipts beginning `prefix-`: receipt → sale id."""
        return dict(self.query("SELECT external_receipt_id, id FROM sales WHERE company_id = %s"
                               " AND external_receipt_id LIKE %s", self.company_id, f"{prefix}-%"))

    def entries_repeated(self, sale_ids: list[str]) -> list[tuple]:
        """(sale, entry type, count) for any sale with an entry type written more than once."""
        return self.query("SELECT sale_id, type, count(*) FROM ledger_entries"
                          " WHERE company_id = %s AND sale_id = ANY(%s) GROUP BY sale_id, type"
                          " HAVING count(*) > 1", self.company_id, sale_ids)

    def ensure_running(self) -> None:
        """Each scenario starts from a serving web and a listening worker, whatever an
        earlier one left."""
        if not self.web.running():
            self.start_web()
        if not self.worker.running():
            self.start_worker()

    def logs(self) -> str:
        return "\n\n".join(f"--- {p.log.name}\n{p.tail()}" for p in (self.web, self.worker))

    def close(self) -> None:
        self._cleanup.close()
