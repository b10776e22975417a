"""The profile's layers (bench/register_cpu.py), the workers' sampler (bench/worker_sampler.py)
and the CPU of phases in turns (bench/machine_cpu.py) that docs/performance.md's tables come
from: a module put in the wrong layer once made the driver's cost read as the service's."""
import importlib.util
import signal
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


register_cpu = _load("register_cpu")

SITE = "/srv/.venv/lib/python3.11/site-packages"
SERVING = [f"run ({SITE}/gunicorn/workers/sync.py)", f"handle ({SITE}/gunicorn/workers/sync.py)"]
IN_FLASK = SERVING + [f"handle_request ({SITE}/gunicorn/workers/sync.py)",
                      f"wsgi_app ({SITE}/flask/app.py)"]


def _samples(directory: Path, stacks: dict[str, int]) -> Path:
    directory.mkdir()
    (directory / "101.txt").write_text("".join(f"{s} {n}\n" for s, n in stacks.items()))
    return directory


def test_the_workers_samples_by_layer_gunicorns_own_loop_a_layer_of_its_own(tmp_path):
    stacks = {
        ";".join(IN_FLASK + ["run (/srv/app/services/unit_of_work.py)"]): 5,
        ";".join(IN_FLASK + ["quote_receipt (/srv/app/services/checkout/quotes.py)"]): 3,
        # Accepting comes before `handle`: gunicorn's own all the same.
        ";".join([f"run ({SITE}/gunicorn/workers/sync.py)",
                  f"accept ({SITE}/gunicorn/workers/sync.py)", "accept (/usr/lib/socket.py)"]): 1,
        ";".join(SERVING + [f"parse ({SITE}/gunicorn/http/message.py)"]): 1,
        # The Procfile's worker of one thread serves in its own loop: gthread's run.
        ";".join([f"run ({SITE}/gunicorn/workers/gthread.py)",
                  f"handle ({SITE}/gunicorn/workers/gthread.py)",
                  f"handle_request ({SITE}/gunicorn/workers/gthread.py)",
                  f"wsgi_app ({SITE}/flask/app.py)", "dumps (/usr/lib/json/encoder.py)"]): 2,
        # The worker loading the app before it serves: not a request's.
        f"init_process ({SITE}/gunicorn/workers/base.py);load_wsgi (/srv/wsgi.py)": 40,
    }
    shares = register_cpu.classify_workers(str(_samples(tmp_path / "s", stacks)))
    assert shares["samples"] == 12
    assert shares["share"] == {
        "statement execution in the driver": "41.7 %",
        "the service": "25.0 %",
        "gunicorn (waiting, accepting, parsing, the WSGI environ, writing, closing)": "16.7 %",
        "JSON encoding": "16.7 %"}


def test_the_edges_modules_keep_their_layers_in_app_web_and_in_a_baseline_tree():
    """app/web/ since the edge became a package; app/ in an export of e2231c4, which
    --baseline profiles beside this tree."""
    flask = f"{SITE}/flask/app.py:wsgi_app"
    for module, function, layer in (("auth.py", "authenticate_request", "authentication"),
                                    ("idempotency.py", "wrapper", "idempotency"),
                                    ("bodies.py", "decode", "JSON decoding"),
                                    ("metrics.py", "observe_request", "metrics"),
                                    ("rate_limit.py", "lease", "rate-limit lease"),
                                    ("requests.py", "_log", "logging"),
                                    ("requests.py", "_finish", "commit and the request's hooks")):
        for place in ("app/web/", "app/"):
            stack = [f"/srv/{place}{module}:{function}", flask]
            assert register_cpu._layer(stack) == layer, (place, module, function)


def test_py_spys_samples_count_only_what_serves_a_request(tmp_path):
    thread = (f"Thread.run (threading.py:982);_worker (concurrent/futures/thread.py:83);"
              f"ThreadWorker.handle ({SITE}/gunicorn/workers/gthread.py:1)")
    loop = (f"Worker.init_process ({SITE}/gunicorn/workers/base.py:1);"
            f"ThreadWorker.run ({SITE}/gunicorn/workers/gthread.py:2)")
    raw = tmp_path / "raw.txt"
    # A frame's text may hold a line break other than "\n" (py-spy quotes what it reads).
    raw.write_bytes(
        f"{thread};ThreadWorker.handle_request ({SITE}/gunicorn/workers/gthread.py:3);"
        f"Flask.wsgi_app ({SITE}/flask/app.py:9);dumps ({SITE}/../json/encoder.py:3) 4\n"
        f"{thread};Parser.__next__ ({SITE}/gunicorn/http/parser.py:4);"
        f"read \x1c\r( (<string>) 3\n"
        f"{loop};PollableMethodQueue.run_callbacks ({SITE}/gunicorn/workers/gthread.py:5) 2\n"
        f"{loop};EpollSelector.select (selectors.py:468) 9\n"  # waiting for a request
        f"Worker.init_process ({SITE}/gunicorn/workers/base.py:1);"
        f"Worker.load_wsgi ({SITE}/gunicorn/workers/base.py:6);<module> (app/__init__.py:1) 5\n"
        .encode())
    assert register_cpu.classify([str(raw)]) == {"samples": 9, "share": {
        "JSON encoding": "44.4 %", register_cpu.GUNICORN: "55.6 %"}}


def test_the_sampler_writes_what_the_classifier_reads(tmp_path, monkeypatch):
    # The sampler builds on the Procfile's settings, which would otherwise make a metrics
    # directory of their own and name it in this process's environment for every later test.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))
    sampler = _load("worker_sampler")
    monkeypatch.setenv("WORKER_SAMPLES", str(tmp_path / "samples"))
    previous = signal.getsignal(signal.SIGPROF)
    try:
        sampler.post_fork(None, None)
        spent = time.process_time() + 0.05
        while time.process_time() < spent:  # CPU for the timer to sample
            sum(range(1000))
        sampler.worker_exit(None, None)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, previous)
    [written] = (tmp_path / "samples").glob("*.txt")
    stacks = list(register_cpu._stacks([str(written)]))
    assert sum(count for _, count in stacks) >= 10
    here = f"{__file__}:test_the_sampler_writes_what_the_classifier_reads"
    assert any(here in stack for stack, _ in stacks)


def test_turns_of_one_kind_of_load_add_up_to_one_figure():
    machine_cpu = _load("machine_cpu")

    class Phase:  # a MachineCpu after its phase: what each kind of process spent, seconds
        def __init__(self, **seconds):
            self.seconds = seconds

    total = machine_cpu.CpuSpent()
    total.add(Phase(postgresql=1.0, gunicorn=0.5, registers=0.25))
    total.add(Phase(postgresql=2.0, gunicorn=1.5, registers=0.25))
    assert total.per_checkout_ms(1000) == {"postgresql": 3.0, "gunicorn": 2.0, "registers": 0.5,
                                           "machine": 5.5}


def test_two_served_answers_differ_only_where_the_mask_hides():
    class Answer:  # what the HTTP client and the test client both give: status, headers, body
        status = "201 CREATED"

        def __init__(self, date: str, request_id: str, **more):
            self.headers = {"Date": date, "X-Request-Id": request_id, **more}

        def get_data(self) -> bytes:
            return b'{"ok":true}'

    first = register_cpu._masked(Answer("Fri, 27 Nov 2026 02:33:22 GMT", "a" * 32))
    second = register_cpu._masked(Answer("Sat, 28 Nov 2026 11:04:59 GMT", "b" * 32,
                                         Connection="close"))  # a baseline's sync worker
    assert first == second == "201 CREATED\nDate: *\nX-Request-Id: *\n\n{\"ok\":true}"


def test_a_served_register_keeps_its_connection_and_connects_again_when_it_is_closed():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    peers = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keeps the connection unless told otherwise

        def do_POST(self):
            peers.append(self.client_address)
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(201)
            self.send_header("Content-Length", "2")
            if self.path == "/close":
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        send = register_cpu._http(server.server_address[1])
        answers = [send(path, b"{}", {}) for path in ("/a", "/b", "/close", "/c")]
        assert [answer.status_code for answer in answers] == [201] * 4
        assert peers[0] == peers[1] == peers[2] != peers[3]
    finally:
        server.shutdown()
        server.server_close()
