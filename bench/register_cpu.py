"""The app's own CPU per checkout (open, quote 4 lines, hold, commit) through the Flask test
client on PostgreSQL, for one or more source trees measured in the same sitting: each tree
serves from a process of its own, the trees taking turns round by round over one seeded
database, so the machine's drift falls on all of them alike. Process time leaves out waiting
on PostgreSQL and other processes' queueing.

    .venv/bin/python bench/register_cpu.py [--baseline /tmp/main-export] [--rounds 8]

Each tree's answers to one scripted checkout are compared byte for byte (ids, times and the
request id masked; header names, their order and every other byte kept): `same answers`.
`--profile N` instead samples where N checkouts of this tree spend their CPU, by layer;
`--classify RAW…` sorts by the same layers py-spy's samples of the Procfile's workers under
bench/checkout.py (`py-spy record -p WORKER -f raw --gil --nonblocking`: the threads holding
the interpreter), gunicorn's own part a layer of its own; `--classify-workers DIR` those
bench/worker_sampler.py took (its timer's handler runs in a process's main thread: the
Procfile's worker of one thread, which serves in its loop, or a sync worker; not a pool's
threads, with WEB_THREADS above one).
`--instructions N` instead counts the machine instructions N checkouts of each tree execute in
its process (valgrind's callgrind, switched on for those checkouts alone): the same count run
after run whatever else the machine does, so a change of half a percent shows, where process
time resolves about 2 % (kernel work on the process's behalf, a system call's inside, is not
counted).
`--served` sends the checkouts over HTTP to each tree's gunicorn instead, started as the
Procfile's `web` line with one worker, one connection a request as a register makes them, and
counts that worker's CPU (or, with `--instructions`, its instructions): gunicorn's own part of
a request is in the figure, the client's is not. With `--ceiling wsgi|flask` the serving
stack's ceiling (bench/ceiling_app.py) is served beside as a third tree: what the app's
requests cost a worker with nothing of the app.
"""
from __future__ import annotations

import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINES = [  # bench/checkout.py's receipt
    {"lineId": "1", "sku": "SKU-0001", "name": "Milk 3.2%", "quantity": "2", "price": "89.90",
     "amount": "179.80"},
    {"lineId": "2", "sku": "SKU-0007", "name": "Cigarettes", "quantity": "1", "price": "210.00",
     "amount": "210.00"},
    {"lineId": "3", "sku": "SKU-0042", "name": "Сыр «Российский»", "quantity": "0.345",
     "price": "1290.00", "amount": "445.05"},
    {"lineId": "4", "sku": "SKU-0100", "name": "Bread", "quantity": "1", "price": "54.99",
     "amount": "49.99"},
]
_MASKED = re.compile(  # the balance, ids, keys, moments: what differs between two checkouts
    rb'balance: +[0-9.]+|[0-9a-f]{32}|[0-9A-Za-z_-]{20,}|\d{4}-\d\d-\d\dT[0-9:.]+Z'
    rb'|\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT')  # the Date header, served


# One tree's side: a process serving checkouts on request

def _child(tree: str, url: str, key: str, pos_key: str, customer: str, cashier: str,
           log_level: str, served: str = "", ceiling_terminal: str = "") -> None:
    """Checkouts through the Flask test client in this process, or, with `served` ("port
    worker-pid"), through HTTP to a gunicorn worker, whose CPU is then the one counted; with
    `ceiling_terminal` (the register's terminal), that worker is bench/ceiling_app.py's, sent
    the same requests at its paths."""
    headers = {"Authorization": f"Bearer {key}", "X-Loyalty-Pos-Key": pos_key,
               "Content-Type": "application/json"}
    if served:
        port, worker = map(int, served.split())
        send, app = _http(port), None
        if ceiling_terminal:
            from floor import ceiling_path

        def cpu_ms() -> float:
            return _cpu_ns(worker) / 1e6
    else:
        sys.path.insert(0, tree)
        from app import create_app
        from app.config import Settings

        app = create_app(Settings(database_url=url, api_key_pepper="bench-pepper",
                                  log_level=log_level, development=False, api_rate_limit=None))
        send = app.test_client().post

        def cpu_ms() -> float:
            return time.process_time() * 1000

    def post(path, body, answers=None):
        response = send(path, data=json.dumps(body, ensure_ascii=False).encode(),
                        headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
        assert response.status_code in (200, 201), response.get_data()
        if answers is not None:
            answers.append(_masked(response))
        return json.loads(response.get_data())

    def checkout(answers=None):
        token = uuid.uuid4() if ceiling_terminal else None  # names the ceiling's checkout

        def at(step: str, path: str) -> str:  # the app's path, or the ceiling's for the step
            return ceiling_path(token, customer, ceiling_terminal, step) if token else path

        opened = post(at("open", "/v1/checkout-sessions"), {
            "externalReceiptId": f"CPU-{uuid.uuid4().hex}", "customerId": customer,
            "cashier": {"externalId": cashier, "name": "Кассир"}}, answers)
        base = f"/v1/checkout-sessions/{opened['id']}"
        quote = post(at("quote", f"{base}/quote"), {"lines": LINES}, answers)
        post(at("hold", f"{base}/hold"), {"quoteId": quote["id"]}, answers)
        post(at("commit", f"{base}/commit"), {"quoteId": quote["id"]}, answers)

    for command in sys.stdin:
        what, _, count = command.strip().partition(" ")
        if what == "answers":
            answers: list[str] = []
            checkout(answers)
            print(json.dumps(answers), flush=True)
        elif what == "run":
            cpu, wall = cpu_ms(), time.perf_counter()
            for _ in range(int(count)):
                checkout()
            print(json.dumps([(cpu_ms() - cpu) / int(count),
                              (time.perf_counter() - wall) * 1000 / int(count)]), flush=True)
        elif what == "profile":
            print(json.dumps(_profile(checkout, int(count))), flush=True)
    if app is not None:
        app.extensions["engine"].dispose()


class _Answer:
    """An HTTP answer as the test client's: status, headers, body."""

    def __init__(self, response: http.client.HTTPResponse):
        self.status_code = response.status
        self.status = f"{response.status} {response.reason}"
        self.headers = response.headers
        self.body = response.read()

    def get_data(self) -> bytes:
        return self.body


def _http(port: int):
    """A register's POSTs on one kept connection, as bench/checkout.py's registers send them
    and the Procfile's web keeps it (http.client connects again where a server closed it, as a
    baseline tree's sync workers do after each answer)."""
    connection = http.client.HTTPConnection("127.0.0.1", port)

    def send(path: str, data: bytes, headers: dict) -> _Answer:
        connection.request("POST", path, body=data, headers=headers)
        return _Answer(connection.getresponse())
    return send


def _cpu_ns(pid: int) -> int:
    """The CPU a process has used, all its threads (the scheduler's count: nanoseconds)."""
    return sum(int((task / "schedstat").read_text().split()[0])
               for task in Path(f"/proc/{pid}/task").iterdir())


def _masked(response) -> str:
    # Whether the server keeps the connection is its serving's, not the answer's.
    head = "".join(f"{name}: {value}\n" for name, value in response.headers.items()
                   if name.lower() != "connection")
    return _MASKED.sub(b"*", f"{response.status}\n{head}\n".encode() + response.get_data()).decode()


# Where the CPU goes: a sampling of the stack on a timer of process time

def _edge(*names: str) -> tuple[str, ...]:
    """Our HTTP edge's modules where they are (app/web/) and where a baseline tree (an export
    of `e2231c4`) has them (app/)."""
    return tuple(f"app/{place}{name}" for name in names for place in ("web/", ""))


LAYERS = (  # the first that a sampled stack passes through names its layer (innermost first)
    ("logging", ("logging/__init__", "app/web/logs.py", *_edge("requests.py:_log"))),
    ("metrics", ("prometheus_client", *_edge("metrics.py"))),
    # The unit of work's statements, SQLAlchemy and the driver, psycopg or psycopg2 (a C
    # call is sampled in the Python frame that made it).
    ("statement execution in the driver", ("psycopg", "sqlalchemy", "unit_of_work.py")),
    ("JSON encoding", ("json/encoder", "json/__init__.py:dumps", "orjson")),
    ("JSON decoding", ("json/decoder", "json/__init__.py:loads", *_edge("bodies.py"))),
    ("response building", ("app/api/base.py:json_response", "resources.py:as_json",
                           "werkzeug/wrappers/response", "werkzeug/datastructures")),
    ("rate-limit lease", (*_edge("rate_limit.py"), *_edge("rate_counts.py"), "limits/")),
    ("authentication", _edge("auth.py")),
    ("idempotency", _edge("idempotency.py")),
    ("request parsing and validation", ("webargs", "marshmallow", "app/api/fields.py",
                                        "checkout_schemas", "app/api/validation")),
    ("the service", ("app/services/",)),
    ("commit and the request's hooks", (*_edge("requests.py"), "app/database/engine.py")),
)


def _profile(checkout, count: int) -> dict:
    import signal
    from collections import Counter

    samples: Counter = Counter()

    def sample(signum, frame):
        stack = []
        while frame is not None:
            code = frame.f_code
            stack.append(f"{code.co_filename}:{code.co_name}")
            frame = frame.f_back
        samples[_layer(stack)] += 1

    signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, 0.0005, 0.0005)
    cpu = time.process_time()
    try:
        for _ in range(count):
            checkout()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
    per_checkout = (time.process_time() - cpu) * 1000 / count
    total = sum(samples.values())
    return {"cpu_ms_per_checkout": round(per_checkout, 3), "samples": total,
            "ms_per_checkout": {layer: round(per_checkout * n / total, 3)
                                for layer, n in samples.most_common()}}


def _layer(stack: list[str], outside: str = "test client and the bench (not under gunicorn)"
           ) -> str:
    """The layer of a sampled stack (innermost frame first); outside the app's WSGI call it
    is the test client and the bench's own work in process, gunicorn's under gunicorn."""
    if not any("flask/app.py" in frame for frame in stack):
        return outside
    for frame in stack:
        for layer, marks in LAYERS:
            if any(mark in frame for mark in marks):
                return layer
    return "WSGI and Flask"


_PY_SPY_FRAME = re.compile(r"^(.*) \((.*?)(?::\d+)?\)$")


def classify(files: list[str]) -> dict:
    """py-spy's samples of the Procfile's workers, by layer: share of the samples taken while
    a worker serves (its loop and its threads; not its loading the app, nor a thread that waits
    for work). Recorded with `--gil`, only the thread holding the interpreter is sampled: the
    threaded worker's CPU in Python, each thread's own (psycopg2's and the kernel's work with
    the interpreter let go is not counted); without it py-spy counts a wait inside a C call as
    running."""
    return _shares(_stacks(files), lambda stack: _serving(stack) and not _waiting(stack[0]),
                   GUNICORN)


GUNICORN = "gunicorn (its loop, the thread pool, parsing, the WSGI environ, writing)"
_SERVING_FRAME = re.compile(r"gunicorn/workers/.*[.:](run|handle)$")  # py-spy's and ours


def _serving(stack: list[str]) -> bool:
    """Whether a sampled stack passes through a worker's loop or a thread's handling of a
    connection: not its loading the app."""
    return any(_SERVING_FRAME.search(frame) for frame in stack)


def _waiting(innermost: str) -> bool:
    """py-spy's sample of a thread waiting in its selector for the next connection or request
    (a timer of CPU time samples the system call's own work there, which is gunicorn's)."""
    return innermost.endswith(("selectors.py:EpollSelector.select",
                               "selectors.py:PollSelector.select"))


def classify_workers(directory: str) -> dict:
    """bench/worker_sampler.py's samples of gunicorn's workers, by layer: what a worker spends
    once it serves (its loop: waiting, accepting, parsing, the app, writing, closing; not its
    loading the app), gunicorn's own part a layer of its own. The sampler sees a process's main
    thread: a sync worker, or the Procfile's of one thread, which serves in its loop."""
    return _shares(_stacks(sorted(str(p) for p in Path(directory).glob("*.txt"))), _serving,
                   "gunicorn (waiting, accepting, parsing, the WSGI environ, writing, closing)")


def _stacks(files: list[str]):
    """(stack, count) of collapsed samples, innermost frame first, as "file:function"."""
    for name in files:
        # Only "\n" ends a sample: a frame's text may hold another of the line breaks that
        # splitlines() and text mode's newlines cut at.
        for line in filter(None, Path(name).read_bytes().decode().split("\n")):
            frames, _, count = line.rpartition(" ")
            yield ([f"{m[2]}:{m[1]}" if (m := _PY_SPY_FRAME.match(f)) else f
                    for f in reversed(frames.split(";"))], int(count))


def _shares(stacks, served, outside: str) -> dict:
    from collections import Counter

    samples: Counter = Counter()
    for stack, count in stacks:
        if not served(stack):
            continue  # not serving (waiting for a connection or a request; booting)
        samples[_layer(stack, outside)] += count
    total = sum(samples.values())
    return {"samples": total,
            "share": {layer: f"{n * 100 / total:.1f} %" for layer, n in samples.most_common()}}


# Instructions: callgrind runs each tree's process with counting off until its checkouts

# Counting is switched on around the measured checkouts by callgrind_control; the counts are
# read from the running process, so the profile callgrind writes at exit is not kept.
CALLGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--quiet",
             "--callgrind-out-file=/dev/null"]


def _instructions(counted: dict, ask, count: int) -> dict:
    """Each tree's instructions per checkout over `count` checkouts (after the warm-up), in
    the process `counted` names for it (its own, or its gunicorn worker)."""

    def control(pid: int, *options: str) -> str:
        return subprocess.run(["callgrind_control", *options, str(pid)], check=True,
                              capture_output=True, text=True).stdout

    figures = {}
    for name, pid in counted.items():
        control(pid, "--instr=on")
        control(pid, "--zero")
        ask(name, f"run {count}")
        read = control(pid, "-e", "Ir")  # read while counting is on
        control(pid, "--instr=off")
        total = sum(int(n.replace(",", "")) for n in re.findall(r"Th +\d+ +([\d,]+)", read))
        figures[name] = {"instructions_per_checkout": total // count}
    if "baseline" in figures:
        change = (figures["this"]["instructions_per_checkout"]
                  / figures["baseline"]["instructions_per_checkout"] - 1)
        figures["change"] = f"{change * 100:+.2f} %"
    return figures


# Served: a tree's gunicorn as the Procfile starts it, with one worker

def _serve(stack: ExitStack, url: str, tree: str, log_level: str,
           instructions: bool, ceiling=None) -> tuple[int, int]:
    """The tree's web line with one worker (bench/harness.py), under callgrind for
    `instructions` (its forked worker counted, counting off until asked), stopped with
    `stack`: its port and its worker's pid. `ceiling`, (kind, shop): the serving stack's
    ceiling instead (bench/ceiling_app.py), replaying the shop's trace."""
    from checkout import ceiling_server
    from harness import gunicorn_process

    wrapper = (*CALLGRIND, "--trace-children=yes") if instructions else ()
    server = (ceiling_server(url, ceiling[1], 1, ceiling[0], wrapper=wrapper, LOG_LEVEL=log_level)
              if ceiling else gunicorn_process(url, 1, tree=tree, wrapper=wrapper,
                                               LOG_LEVEL=log_level))
    port, server = stack.enter_context(server)
    [worker] = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    return port, int(worker)


# The sitting: seed once, then the trees take turns

def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", help="another tree (an export of main) to measure beside")
    parser.add_argument("--tree", default=str(HERE.parent),
                        help="the tree measured as `this` (default: this repository)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--checkouts", type=int, default=10,
                        help="per round and tree: small, so the machine's drift meets both")
    parser.add_argument("--profile", type=int, default=0, help="sample N checkouts by layer")
    parser.add_argument("--instructions", type=int, default=0,
                        help="count the instructions of N checkouts of each tree (callgrind)")
    parser.add_argument("--classify", nargs="+", metavar="RAW",
                        help="instead: py-spy's raw (collapsed) samples of gunicorn's workers, "
                             "by layer (py-spy record -p WORKER -f raw --gil --nonblocking)")
    parser.add_argument("--classify-workers", metavar="DIR",
                        help="instead: bench/worker_sampler.py's samples of gunicorn's "
                             "workers, by layer")
    parser.add_argument("--log-level", default="INFO",
                        help="the app's LOG_LEVEL (INFO, as served by default: a JSON line "
                             "a request, written to /dev/null here)")
    parser.add_argument("--served", action="store_true",
                        help="through HTTP to each tree's gunicorn (the Procfile's web line, one "
                             "worker), on one kept connection, counting the worker's CPU: "
                             "gunicorn's part included")
    parser.add_argument("--ceiling", choices=("wsgi", "flask"),
                        help="with --served, the serving stack's ceiling as a third tree "
                             "(bench/ceiling_app.py: the app's statements and answers, nothing "
                             "of the app), bare or through Flask")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(*args.child)
    if args.classify:
        return print(json.dumps(classify(args.classify), indent=1))
    if args.classify_workers:
        return print(json.dumps(classify_workers(args.classify_workers), indent=1))

    if args.served and args.profile:
        parser.error("--profile samples the process serving in process: not with --served")
    if args.ceiling and not args.served:
        parser.error("--ceiling is served: with --served")
    from checkout import seed  # also puts the repository on sys.path
    from harness import bench_database
    from sqlalchemy.engine import make_url

    trees = ({"this": args.tree} | ({"baseline": args.baseline} if args.baseline else {})
             | ({"ceiling": args.tree} if args.ceiling else {}))
    with bench_database() as url, ExitStack() as servers:
        # Each tree picks its own driver for a bare postgresql:// (app/config.py's
        # normalise_database_url), as its DATABASE_URL would give it.
        url = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        # Register 0 is the floor's (bench/floor.py captured a checkout and a return on it):
        # the trees take the next ones, alike.
        shop = seed(url, registers=len(trees) + 1, extra_customers=1000, history=0)
        children, counted = {}, {}
        for (name, tree), register in zip(trees.items(), shop.registers[1:]):
            served = []
            if args.served:
                ceiling = (args.ceiling, shop) if name == "ceiling" else None
                port, counted[name] = _serve(servers, url, tree, args.log_level,
                                             bool(args.instructions), ceiling)
                # as the child takes them
                served = [f"{port} {counted[name]}", register.terminal_id if ceiling else ""]
            children[name] = subprocess.Popen(
                (CALLGRIND if args.instructions and not args.served else [])
                + [sys.executable, __file__, "--child", tree, url, shop.key, register.pos_key,
                 register.customer_id, register.cashier_id, args.log_level, *served], cwd=tree,
                text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            counted.setdefault(name, children[name].pid)

        def ask(name: str, command: str):
            children[name].stdin.write(command + "\n")
            children[name].stdin.flush()
            return json.loads(children[name].stdout.readline())

        try:
            answers = {name: ask(name, "answers") for name in trees}
            compared = [json.dumps(a) for name, a in answers.items() if name != "ceiling"]
            print(json.dumps({"same answers": len(set(compared)) == 1,  # the ceiling's are canned
                              "answers": answers["this"]}, ensure_ascii=False, indent=1))
            for name in trees:
                ask(name, "run 100")  # warm up: plans, caches
            if args.instructions:
                return print(json.dumps(_instructions(counted, ask, args.instructions),
                                        indent=1))
            if args.profile:
                for name in trees:
                    print(json.dumps({name: ask(name, f"profile {args.profile}")}, indent=1),
                          flush=True)
                return
            figures = {name: [] for name in trees}
            for round_ in range(args.rounds):
                order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
                for name in order:
                    figures[name].append(ask(name, f"run {args.checkouts}"))
                if round_ % 10 == 9:
                    print(json.dumps({name: round(statistics.median(c for c, _ in rows), 3)
                                      for name, rows in figures.items()}), flush=True)
        finally:
            for child in children.values():
                child.stdin.close()
                child.wait(timeout=30)
    report = {name: {"cpu_ms_best": round(min(c for c, _ in rows), 3),
                     "cpu_ms_median": round(statistics.median(c for c, _ in rows), 3),
                     "wall_ms_median": round(statistics.median(w for _, w in rows), 3)}
              for name, rows in figures.items()}
    if args.baseline:
        for figure in ("cpu_ms_best", "cpu_ms_median"):
            change = report["this"][figure] / report["baseline"][figure] - 1
            report[f"change of {figure}"] = f"{change * 100:+.1f} %"
        # Round by round, each tree's round beside the other's, next to it in time.
        paired = [mine[0] / theirs[0] - 1 for mine, theirs in zip(figures["this"],
                                                                  figures["baseline"])]
        report["paired change, median"] = f"{statistics.median(paired) * 100:+.1f} %"
        report["rounds this tree was cheaper"] = f"{sum(p < 0 for p in paired)} of {len(paired)}"
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
