import socket


def free_port() -> int:
    """A port nothing listens on (until something is started on it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
