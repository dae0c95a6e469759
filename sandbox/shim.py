"""The in-sandbox TCP shim: 127.0.0.1:<port> -> the forwarder's Unix socket.

The sandbox runs with ``--network none``: its only way out is a Unix socket
on a volume mounted read-only, served by the forwarder. The ``neo4j`` driver
can only dial TCP, so this shim listens on the container's own loopback and
relays each connection to the socket. It can reach nothing the socket cannot.
"""

from __future__ import annotations

import socket
import threading

from sandbox.pipe import splice


class Shim:
    """Listens on 127.0.0.1 (an ephemeral port unless given) and relays to ``socket_path``."""

    def __init__(self, socket_path: str, port: int = 0) -> None:
        self.socket_path = socket_path
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", port))
        self._listener.listen(16)
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, name="shim", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.socket_path)
            except OSError:
                client.close()
                upstream.close()
                continue
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            splice(client, upstream)

    def close(self) -> None:
        self._listener.close()
