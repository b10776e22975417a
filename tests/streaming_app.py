"""A WSGI app that answers slowly, for tests/test_procfile_web.py to serve with the web's own
gunicorn settings: `/stream` writes a part every 0.3 s for 3 s; `/health` answers at once (it
is up)."""
import time


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    if environ["PATH_INFO"] == "/health":
        return [b"ok\n"]
    return _parts()


def _parts():
    for index in range(10):
        time.sleep(0.3)
        yield f"part {index}\n".encode()
