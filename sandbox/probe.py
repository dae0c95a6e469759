"""A reachability probe, run in a container started exactly as the pool starts a sandbox.

    python3 -m sandbox.probe            (an entrypoint override; the request in CGW_PROBE)

It tries what a query must never manage from the sandbox: TCP connections to the given
targets, name resolution, writes to the socket volume; it lists the network interfaces
it can see; and, when asked, does the one thing a sandbox must manage: a query through
the sandbox's own Neo4j backend, over the forwarder's socket. One JSON report on stdout.

``cypher-gateway doctor`` runs it against the configured Neo4j; the network tests run it
against live targets after showing each is reachable from an ordinary container.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass, field

from sandbox.wire import _STRICT, Credentials, SandboxEnv, SandboxJob, decode, to_json

CONNECT_TIMEOUT_S = 2.0
ANSWER_QUERY = "RETURN 41 + 1 AS answer"


@dataclass(kw_only=True)
class ProbeRequest:
    __pydantic_config__ = _STRICT

    # (host, port) pairs the sandbox must not reach.
    targets: list[tuple[str, int]] = field(default_factory=list)
    # Names the sandbox must not resolve.
    names: list[str] = field(default_factory=list)
    # The forwarder's socket: its volume must be read-only from here.
    socket_path: str | None = None
    # Run ANSWER_QUERY through the sandbox's own backend (the configured transport, over the socket),
    # with the account read from stdin as a sandbox reads it.
    query: bool = False


@dataclass(kw_only=True)
class ProbeReport:
    __pydantic_config__ = _STRICT

    tcp: dict[str, str] = field(default_factory=dict)  # "host:port" -> "connected" | "blocked: ..."
    dns: dict[str, str] = field(default_factory=dict)  # name -> "resolved: ..." | "failed: ..."
    fs: dict[str, str] = field(default_factory=dict)  # "create" | "unlink" -> "allowed" | "denied: ..."
    interfaces: list[str] = field(default_factory=list)
    # ANSWER_QUERY's answer (42), or why it failed.
    answer: int | None = None
    query_error: str | None = None

    def breaches(self) -> list[str]:
        """Everything the sandbox managed that it must not (empty when the box holds)."""
        found = [f"connected to {target}" for target, verdict in self.tcp.items() if verdict == "connected"]
        found += [f"resolved {name}" for name, verdict in self.dns.items() if not verdict.startswith("failed")]
        found += [f"could {what} on the socket volume" for what, verdict in self.fs.items() if verdict == "allowed"]
        if self.interfaces != ["lo"]:
            found.append(f"has network interfaces {self.interfaces} (only lo expected)")
        return found


def _tcp(host: str, port: int) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(CONNECT_TIMEOUT_S)
        try:
            s.connect((host, port))
        except OSError as exc:
            return f"blocked: {type(exc).__name__}: {exc}"
    return "connected"


def _dns(name: str) -> str:
    try:
        return "resolved: " + str(socket.getaddrinfo(name, 443)[0][4])
    except OSError as exc:
        return f"failed: {exc}"


def _fs(socket_path: str) -> dict[str, str]:
    def create() -> None:
        with open(os.path.join(os.path.dirname(socket_path), "probe-write"), "w"):
            pass

    def unlink() -> None:
        os.unlink(socket_path)

    verdicts: dict[str, str] = {}
    for what, attempt in (("create", create), ("unlink", unlink)):
        try:
            attempt()
            verdicts[what] = "allowed"
        except OSError as exc:
            verdicts[what] = f"denied: {exc.strerror}"
    return verdicts


def _answer(credentials: Credentials) -> tuple[int | None, str | None]:
    # The sandbox's own configuration and backend: the path a real job takes.
    from sandbox.config import SandboxConfig
    from sandbox.main import backend_type

    config = SandboxConfig.from_env(credentials)
    backend = backend_type(config)(config)
    try:
        backend.warm()
        job = SandboxJob(query_id="probe", cypher=ANSWER_QUERY, timeout_seconds=5.0, max_rows=1, max_bytes=1024)
        result = backend.run(job)
    finally:
        backend.close()
    if result.ok and result.rows:
        return int(result.rows[0][0]), None
    return None, result.error.message if result.error else "no row"


def probe(request: ProbeRequest, credentials: Credentials | None = None) -> ProbeReport:
    report = ProbeReport(
        tcp={f"{host}:{port}": _tcp(host, port) for host, port in request.targets},
        dns={name: _dns(name) for name in request.names},
        fs=_fs(request.socket_path) if request.socket_path else {},
        interfaces=sorted(name for _, name in socket.if_nameindex()),
    )
    if request.query:
        if credentials is None:
            report.query_error = "no account line on stdin"
        else:
            report.answer, report.query_error = _answer(credentials)
    return report


def main() -> int:
    request = decode(ProbeRequest, os.environ[SandboxEnv.PROBE])
    credentials = None
    if request.query:
        from sandbox.config import read_credentials

        credentials = read_credentials()
    print(to_json(probe(request, credentials)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
