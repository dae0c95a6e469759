"""Thin helpers over the Docker SDK: hardened container specs and the attach stream.

The attach stream multiplexes stdout and stderr: each frame is an 8-byte
header (stream id, three zero bytes, big-endian length) and its payload.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from docker.types import Mount

from gateway.runner.settings import RunnerSettings
from sandbox.wire import CA_FILE_PATH, SANDBOX_UID, SCRATCH_DIR, SOCKET_DIR, SOCKET_PATH, SandboxEnv

LABEL_ROLE = "cypher-gateway.role"
LABEL_RUNNER = "cypher-gateway.runner"
# "<hostname>:<pid>" of the process that owns a runner: lets a new runner remove what a
# dead one left behind without touching the containers of runners that are alive.
LABEL_OWNER = "cypher-gateway.owner"


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def labels(role: str, runner_id: str) -> dict[str, str]:
    return {LABEL_ROLE: role, LABEL_RUNNER: runner_id, LABEL_OWNER: owner_label()}


STDOUT, STDERR = 1, 2


def hardening(settings: RunnerSettings, runtime: str) -> dict[str, Any]:
    """Options every container we start gets (sandbox and forwarder alike), under ``runtime``."""
    return {
        "runtime": runtime,
        "read_only": True,
        "cap_drop": ["ALL"],
        # Docker's default seccomp profile stays on: we never pass seccomp=unconfined.
        "security_opt": ["no-new-privileges"],
        "user": f"{SANDBOX_UID}:{SANDBOX_UID}",
        "pids_limit": settings.pids_limit,
        "mem_limit": f"{settings.memory_mb}m",
        "memswap_limit": f"{settings.memory_mb}m",  # no swap: a memory hog is OOM-killed, not slowed
        "nano_cpus": int(settings.cpus * 1e9),
        "tmpfs": {SCRATCH_DIR: f"rw,noexec,nosuid,nodev,size={settings.tmpfs_mb}m"},
        "ipc_mode": "none",
        "log_config": {"Type": "none", "Config": {}},  # nothing a container prints lands in Docker's logs
    }


def sandbox_spec(
    settings: RunnerSettings, volume: str, runner_id: str, *, runtime: str, max_jobs: int
) -> dict[str, Any]:
    """A sandbox container; its configuration holds nothing secret (the account comes on stdin)."""
    env = {
        SandboxEnv.TRANSPORT: settings.transport,
        SandboxEnv.NEO4J_SOCKET: SOCKET_PATH,
        SandboxEnv.MAX_JOBS: str(max_jobs),
    }
    if settings.database:
        env[SandboxEnv.DATABASE] = settings.database
    if settings.transport == "query-api":
        env[SandboxEnv.QUERY_API_URL] = settings.query_api_url()
    mounts = [Mount(target=SOCKET_DIR, source=volume, type="volume", read_only=True)]
    if settings.tls != "off":
        # TLS runs in the sandbox, checked against the real host name: the forwarder relays ciphertext.
        env[SandboxEnv.TLS] = settings.tls
        env[SandboxEnv.TLS_SERVER_NAME] = settings.neo4j_host
    if settings.ca_file is not None:
        # The one host file a sandbox sees: the CA certificate, read-only.
        env[SandboxEnv.TLS_CA_FILE] = CA_FILE_PATH
        mounts.append(Mount(target=CA_FILE_PATH, source=str(settings.ca_file), type="bind", read_only=True))
    return {
        "image": settings.image,
        "stdin_open": True,
        "network_mode": "none",
        "environment": env,
        "mounts": mounts,
        "labels": labels("sandbox", runner_id),
        **hardening(settings, runtime),
    }


def forwarder_spec(settings: RunnerSettings, volume: str, runner_id: str, *, runtime: str) -> dict[str, Any]:
    spec = {
        "image": settings.image,
        # The image's entry point (the isolated launcher), told to be the forwarder.
        "command": ["forwarder", "--listen", SOCKET_PATH, "--target", f"{settings.neo4j_host}:{settings.neo4j_port}"],
        "network_mode": settings.resolved_forwarder_network(),
        "mounts": [Mount(target=SOCKET_DIR, source=volume, type="volume", read_only=False)],
        "labels": labels("forwarder", runner_id),
        "detach": True,
        **hardening(settings, runtime),
    }
    # The forwarder's own output is its readiness line: keep Docker's log for it.
    spec["log_config"] = {"Type": "json-file", "Config": {"max-size": "1m"}}
    return spec


def raw_socket(attached: Any) -> socket.socket:
    """The plain socket under what ``attach_socket`` returns (a SocketIO on Unix sockets)."""
    sock = getattr(attached, "_sock", attached)
    assert isinstance(sock, socket.socket)
    return sock


class StreamClosed(Exception):
    pass


@dataclass
class FrameReader:
    """Reads the multiplexed attach stream; keeps stdout whole and a short stderr tail."""

    sock: socket.socket
    buffer: bytearray = field(default_factory=bytearray)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    stdout_cap: int = 64 * 1024 * 1024

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(262144)
        except TimeoutError:
            raise
        except OSError as exc:
            raise StreamClosed(str(exc)) from exc
        if not chunk:
            raise StreamClosed("stream closed")
        self.buffer += chunk

    def _frames(self) -> None:
        while len(self.buffer) >= 8:
            stream, length = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + length:
                return
            payload = bytes(self.buffer[8 : 8 + length])
            del self.buffer[: 8 + length]
            if stream == STDOUT:
                if len(self.stdout) + len(payload) > self.stdout_cap:
                    raise StreamClosed("sandbox wrote more than the stdout cap")
                self.stdout += payload
            elif stream == STDERR:
                self.stderr = bytearray((self.stderr + payload)[-4096:])

    def read_until_stderr(self, marker: bytes, deadline: float) -> None:
        """Wait for ``marker`` on stderr and consume it (a reused container says it once per job)."""
        while marker not in self.stderr:
            self._fill(deadline)
            self._frames()
        del self.stderr[: self.stderr.index(marker) + len(marker)]

    def read_stdout_line(self, deadline: float) -> bytes:
        """The next line on stdout (consumed)."""
        while b"\n" not in self.stdout:
            self._fill(deadline)
            self._frames()
        end = self.stdout.index(b"\n")
        line = bytes(self.stdout[:end])
        del self.stdout[: end + 1]
        return line
