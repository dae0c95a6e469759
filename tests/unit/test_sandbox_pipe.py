"""The byte pump under the shim and the forwarder: when one end hangs up, the other end hears it.

A server that closes at once (a TLS-only Neo4j refusing a plaintext handshake, a port with
nothing behind it) must reach the driver as a closed connection, not as silence until its
timeout. Real sockets, no services.
"""

from __future__ import annotations

import socket

from sandbox.pipe import splice


def test_a_hang_up_on_one_side_reaches_the_other_side() -> None:
    for _ in range(50):
        client, near = socket.socketpair()
        far, server = socket.socketpair()
        splice(near, far)
        client.sendall(b"\x60\x60\xb0\x17")
        assert server.recv(4) == b"\x60\x60\xb0\x17"
        server.close()  # the server refuses the handshake and hangs up
        client.settimeout(5)
        assert client.recv(4) == b"", "the client never heard that the server hung up"
        client.close()


def test_bytes_pass_unchanged_both_ways() -> None:
    client, near = socket.socketpair()
    far, server = socket.socketpair()
    splice(near, far)
    payload = bytes(range(256)) * 1024
    client.sendall(payload)
    received = b""
    server.settimeout(5)
    while len(received) < len(payload):
        received += server.recv(65536)
    assert received == payload
    server.sendall(b"reply")
    client.settimeout(5)
    assert client.recv(5) == b"reply"
    client.close()
    server.settimeout(5)
    assert server.recv(1) == b""
