"""A free local TCP port."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on once this returns (the probe socket is closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
