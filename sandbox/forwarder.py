"""The forwarder: a Unix socket -> exactly one TCP host:port (the Neo4j endpoint).

It runs in its own container (the sandbox image, ``--entrypoint python3 -m
sandbox.forwarder``), the only one with a network. The target is fixed on its
command line by the gateway; nothing a sandbox sends can change it, so a
sandbox can reach that one host:port and nothing else.

    python3 -m sandbox.forwarder --listen /run/cgw/neo4j.sock --target 127.0.0.1:17687
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading

from sandbox.pipe import splice
from sandbox.wire import FORWARDER_READY

# Bounds what a misbehaving sandbox fleet can hold open through us.
MAX_CONNECTIONS = 128


def _parse_target(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"target must be host:port, got {text!r}")
    return host.strip("[]"), int(port)


def serve(listen: str, target: tuple[str, int], connect_timeout: float) -> None:
    if os.path.exists(listen):
        os.unlink(listen)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(listen)
    os.chmod(listen, 0o660)
    server.listen(64)
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    print(FORWARDER_READY, file=sys.stderr, flush=True)
    while True:
        client, _ = server.accept()
        if not slots.acquire(blocking=False):
            client.close()
            continue
        threading.Thread(target=_relay, args=(client, target, connect_timeout, slots), daemon=True).start()


def _relay(client: socket.socket, target: tuple[str, int], timeout: float, slots: threading.BoundedSemaphore) -> None:
    try:
        upstream = socket.create_connection(target, timeout=timeout)
    except OSError:
        client.close()
        slots.release()
        return
    upstream.settimeout(None)
    upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # The slot is held for as long as the connection lives.
    splice(client, upstream, on_close=slots.release)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sandbox.forwarder")
    parser.add_argument("--listen", required=True, help="Unix socket path to create")
    parser.add_argument("--target", required=True, type=_parse_target, help="the one host:port to reach")
    parser.add_argument("--connect-timeout", type=float, default=3.0)
    args = parser.parse_args(argv)
    serve(args.listen, args.target, args.connect_timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
