"""Reachability from inside a real sandbox container: exactly one host:port, nothing else.

The probe (``sandbox/probe.py``, the one ``cypher-gateway doctor`` runs) starts with the
sandbox's own container spec (``--network none``, the socket volume read-only, every
hardening option). Each forbidden target is first shown to be live from an ordinary
container (a positive control), so a "blocked" verdict means the sandbox's design
blocked it, not that nothing was listening.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.ops.egress import network_gateways, run_probe
from gateway.runner import SandboxRunner
from gateway.runner.contract import credentials_line
from sandbox.probe import ProbeReport, ProbeRequest
from sandbox.wire import SOCKET_DIR, SOCKET_PATH

LISTENER = (
    "import socket\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 8080)); s.listen(16)\n"
    "while True:\n    c, _ = s.accept(); c.close()\n"
)


def _probe(
    docker_client: Any, spec: dict[str, Any], targets: list[tuple[str, int]], in_sandbox: bool,
    account: bytes | None = None,
) -> ProbeReport:  # fmt: skip
    """The product's probe; in the sandbox also DNS, the socket volume and the one allowed query."""
    spec = {**spec, "labels": {**spec.get("labels", {}), "cypher-gateway.test": "network-probe"}}
    if not in_sandbox:
        return run_probe(docker_client, spec, ProbeRequest(targets=targets))
    request = ProbeRequest(targets=targets, names=["example.com", "neo4j", "host.docker.internal", "pypi.org"],
                           socket_path=SOCKET_PATH, query=True)  # fmt: skip
    return run_probe(docker_client, spec, request, account=account)


@pytest.fixture(scope="module")
def host_listener() -> Iterator[int]:
    """A TCP service on every host address (bridge gateways included), on a free port."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(64)
    port = int(server.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield port
    server.close()


@pytest.fixture(scope="module")
def internal_network(docker_client: Any) -> Iterator[Any]:
    network = docker_client.networks.create(f"cgw-probe-{uuid.uuid4().hex[:8]}", internal=True)
    yield network
    network.remove()


@pytest.fixture(scope="module")
def other_container(docker_client: Any, sandbox_image: str) -> Iterator[str]:
    """Another container with a TCP service, on the default bridge; yields its address."""
    container = docker_client.containers.run(
        sandbox_image, entrypoint=["python3", "-c", LISTENER], detach=True, network_mode="bridge",
        labels={"cypher-gateway.test": "network-probe"},
    )  # fmt: skip
    try:
        container.reload()
        yield str(container.attrs["NetworkSettings"]["IPAddress"])
    finally:
        container.remove(force=True)


def _host_addresses() -> list[str]:
    """Every IPv4 address of the host's interfaces (docker0 and other bridges included)."""
    addresses: set[str] = set()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
        addresses.update(line.split()[3].split("/")[0] for line in out.splitlines() if len(line.split()) > 3)
    with contextlib.suppress(OSError):
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            addresses.add(str(info[4][0]))
    with contextlib.suppress(OSError):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("192.0.2.254", 9))  # no packet is sent; this only picks the outbound address
        addresses.add(probe.getsockname()[0])
        probe.close()
    return sorted(a for a in addresses if not a.startswith("127."))


def test_the_sandbox_reaches_only_the_neo4j_port(
    sandbox_runner: SandboxRunner, docker_client: Any, host_listener: int, internal_network: Any,
    other_container: str,
) -> None:  # fmt: skip
    settings = sandbox_runner.settings
    gateways = network_gateways(docker_client)
    host_addresses = _host_addresses()
    assert "172.17.0.1" in host_addresses, f"expected docker0's address among {host_addresses}"
    forbidden = [
        *[(g, host_listener) for g in gateways],  # the Docker host via each bridge's gateway
        *[(a, host_listener) for a in host_addresses],  # the host's other addresses
        (settings.neo4j_host, settings.neo4j_port),  # the Neo4j port itself, dialled directly
        (settings.neo4j_host, 17474),  # another port of the Neo4j host
        (other_container, 8080),  # another container
        ("169.254.169.254", 80),  # cloud metadata
        ("1.1.1.1", 53),  # the outside world
    ]

    # Positive control: an ordinary container on the internal network reaches the host
    # through the gateway, and one on the bridge reaches the other container.
    internal_gw = internal_network.attrs["IPAM"]["Config"][0]["Gateway"]
    control_spec = {"image": settings.image, "network": internal_network.name, "user": "10001:10001"}
    control = _probe(docker_client, control_spec, [(internal_gw, host_listener)], in_sandbox=False)
    assert control.tcp[f"{internal_gw}:{host_listener}"] == "connected", control
    bridge_spec = {"image": settings.image, "network_mode": "bridge", "user": "10001:10001"}
    control = _probe(docker_client, bridge_spec, [(other_container, 8080), ("172.17.0.1", host_listener)], False)
    assert control.tcp[f"{other_container}:8080"] == "connected", control
    assert control.tcp[f"172.17.0.1:{host_listener}"] == "connected", control
    assert control.breaches(), "an ordinary container is not a sandbox: the probe must say so"

    # The sandbox itself, started exactly as the pool starts it.
    account = credentials_line(settings.neo4j_user, settings.neo4j_password.get_secret_value())
    result = _probe(
        docker_client, sandbox_runner.sandbox_spec(), [*forbidden, (internal_gw, host_listener)], True, account
    )
    assert result.answer == 42, f"the one allowed path (a query through the socket) must work: {result.query_error}"
    leaks = {target: verdict for target, verdict in result.tcp.items() if verdict == "connected"}
    assert not leaks, f"the sandbox reached: {leaks}"
    assert all(v.startswith("failed") for v in result.dns.values()), result.dns
    assert result.interfaces == ["lo"], "the sandbox must have no network interface but loopback"
    assert result.fs["create"].startswith("denied") and result.fs["unlink"].startswith("denied"), result.fs
    assert result.breaches() == []


def test_the_forwarder_targets_only_the_configured_endpoint(sandbox_runner: SandboxRunner, docker_client: Any) -> None:
    forwarder = docker_client.containers.get(sandbox_runner.forwarder_container_id())
    settings = sandbox_runner.settings
    assert forwarder.attrs["Args"][-1] == f"{settings.neo4j_host}:{settings.neo4j_port}"
    host = forwarder.attrs["HostConfig"]
    assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    assert forwarder.attrs["Config"]["User"] == "10001:10001"
    assert SOCKET_DIR in {m["Destination"] for m in forwarder.attrs["Mounts"]}
