"""Ports on 127.0.0.1 for the processes a test or a benchmark starts, or for nothing at all."""
import socket


def free_port() -> int:
    """A port nothing listens on once the probe closes: for a server the test starts, or to
    stand for a service that cannot be reached."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
