"""The forwarder: a Unix socket -> exactly one TCP host:port (the Neo4j endpoint).

It runs in its own container (the sandbox image, entry point ``launch.py forwarder``),
the only one with a network. The target is fixed on its command line by the gateway;
nothing a sandbox sends can change it, so a sandbox can reach that one host:port and
nothing else.

    python3 -m sandbox.forwarder --listen /run/cgw/neo4j.sock --target 127.0.0.1:17687

One event loop relays every connection (no thread per connection: the container's
pids limit bounds threads, not sockets). A connection that cannot be relayed — the cap is
reached, the target refuses — is closed on its own; the accept loop never stops for it.
Neither side's bytes are looked at: Bolt (or TLS for the Query API) passes through.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys

from sandbox.wire import FORWARDER_READY

# Bounds what a misbehaving sandbox fleet can hold open through us.
MAX_CONNECTIONS = 128
CHUNK = 65536


def _parse_target(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"target must be host:port, got {text!r}")
    return host.strip("[]"), int(port)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


class Forwarder:
    def __init__(self, target: tuple[str, int], connect_timeout: float, max_connections: int = MAX_CONNECTIONS):
        self.target = target
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.active = 0

    async def relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self.active >= self.max_connections:
            await _close(client_writer)
            return
        self.active += 1
        try:
            # One connection's trouble ends that connection, never the accept loop.
            with contextlib.suppress(Exception):
                await self._relay(client_reader, client_writer)
        finally:
            await _close(client_writer)
            self.active -= 1

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.target), timeout=self.connect_timeout
            )
        except (OSError, TimeoutError):
            return
        try:
            upstream = up_writer.get_extra_info("socket")
            if upstream is not None:
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pumps = [
                asyncio.ensure_future(_pump(client_reader, up_writer)),
                asyncio.ensure_future(_pump(up_reader, client_writer)),
            ]
            # When either side closes, both go: no half-open connection lingers.
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            await _close(up_writer)


async def serve(listen: str, target: tuple[str, int], connect_timeout: float) -> None:
    if os.path.exists(listen):
        os.unlink(listen)
    forwarder = Forwarder(target, connect_timeout)
    server = await asyncio.start_unix_server(forwarder.relay, path=listen, backlog=256)
    os.chmod(listen, 0o660)
    print(FORWARDER_READY, file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sandbox.forwarder")
    parser.add_argument("--listen", required=True, help="Unix socket path to create")
    parser.add_argument("--target", required=True, type=_parse_target, help="the one host:port to reach")
    parser.add_argument("--connect-timeout", type=float, default=3.0)
    args = parser.parse_args(argv)
    asyncio.run(serve(args.listen, args.target, args.connect_timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
