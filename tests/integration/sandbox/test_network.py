"""Reachability from inside a real sandbox container: exactly one host:port, nothing else.

The probe runs with the sandbox's own container spec (``--network none``, the
socket volume read-only, every hardening option). Each forbidden target is
first shown to be live from an ordinary container (a positive control), so a
"blocked" verdict means the sandbox's design blocked it, not that nothing
was listening.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.runner import SandboxRunner
from gateway.runner.docker_io import sandbox_spec
from sandbox.wire import SOCKET_DIR, SOCKET_PATH

PROBE = r"""
import json, os, socket, sys
targets = json.loads(os.environ["PROBE_TARGETS"])
out = {"tcp": {}, "dns": {}, "fs": {}}
for host, port in targets:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2.0)
    try:
        s.connect((host, port))
        out["tcp"][f"{host}:{port}"] = "connected"
    except OSError as exc:
        out["tcp"][f"{host}:{port}"] = f"blocked: {type(exc).__name__}: {exc}"
    finally:
        s.close()
for name in (("example.com", "neo4j", "host.docker.internal", "pypi.org") if os.environ.get("PROBE_SOCKET") else ()):
    try:
        out["dns"][name] = "resolved: " + str(socket.getaddrinfo(name, 443)[0][4])
    except OSError as exc:
        out["dns"][name] = f"failed: {exc}"
out["interfaces"] = sorted(n for _, n in socket.if_nameindex())
if os.environ.get("PROBE_SOCKET"):
    path = os.environ["PROBE_SOCKET"]
    for what, action in (("create", lambda: open(os.path.join(os.path.dirname(path), "x"), "w")),
                         ("unlink", lambda: os.unlink(path))):
        try:
            action(); out["fs"][what] = "allowed"
        except OSError as exc:
            out["fs"][what] = f"denied: {exc.strerror}"
    # The allowed path: Bolt through the in-sandbox shim to the forwarder's socket.
    sys.path.insert(0, "/opt/sandbox")
    from sandbox.shim import Shim
    import neo4j
    shim = Shim(path)
    with neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{shim.port}",
                                    auth=(os.environ["PROBE_USER"], os.environ["PROBE_PASSWORD"])) as d:
        with d.session(default_access_mode=neo4j.READ_ACCESS) as s:
            out["bolt_via_socket"] = s.run("RETURN 41 + 1 AS x").single()["x"]
print(json.dumps(out))
"""

LISTENER = (
    "import socket\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 8080)); s.listen(16)\n"
    "while True:\n    c, _ = s.accept(); c.close()\n"
)


def _run_probe(
    docker_client: Any,
    spec: dict[str, Any],
    targets: list[tuple[str, int]],
    with_socket: bool,
    account: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Run the probe in a container made from ``spec``; ``account`` logs in through the socket."""
    spec = {**spec, "entrypoint": ["python3", "-c", PROBE], "stdin_open": False, "detach": True}
    spec["environment"] = {**spec.get("environment", {}), "PROBE_TARGETS": json.dumps(targets)}
    if with_socket:
        assert account is not None, "the probe logs in through the socket"
        spec["environment"].update(PROBE_SOCKET=SOCKET_PATH, PROBE_USER=account[0], PROBE_PASSWORD=account[1])
    spec["log_config"] = {"Type": "json-file", "Config": {}}
    spec["labels"] = {**spec.get("labels", {}), "cypher-gateway.test": "network-probe"}
    container = docker_client.containers.run(**spec)
    try:
        status = container.wait(timeout=120)
        logs = container.logs(stdout=True, stderr=True).decode()
        assert status["StatusCode"] == 0, f"the probe failed: {logs[-2000:]}"
        return dict(json.loads(container.logs(stdout=True, stderr=False).decode().strip().splitlines()[-1]))
    finally:
        container.remove(force=True)


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


def _gateways(docker_client: Any) -> list[str]:
    found = []
    for network in docker_client.networks.list():
        network.reload()
        for cfg in (network.attrs.get("IPAM") or {}).get("Config") or []:
            if cfg.get("Gateway"):
                found.append(cfg["Gateway"])
    return found


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
    volume = f"cgw-sock-{sandbox_runner.runner_id}"
    gateways = _gateways(docker_client)
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
    control = _run_probe(docker_client, control_spec, [(internal_gw, host_listener)], with_socket=False)
    assert control["tcp"][f"{internal_gw}:{host_listener}"] == "connected", control
    bridge_spec = {"image": settings.image, "network_mode": "bridge", "user": "10001:10001"}
    control = _run_probe(docker_client, bridge_spec, [(other_container, 8080), ("172.17.0.1", host_listener)], False)
    assert control["tcp"][f"{other_container}:8080"] == "connected", control
    assert control["tcp"][f"172.17.0.1:{host_listener}"] == "connected", control

    # The sandbox itself, started exactly as the pool starts it.
    spec = sandbox_spec(settings, volume, sandbox_runner.runner_id, runtime=str(sandbox_runner.runtime), max_jobs=1)
    account = (settings.neo4j_user, settings.neo4j_password.get_secret_value())
    result = _run_probe(docker_client, spec, [*forbidden, (internal_gw, host_listener)], True, account)
    assert result["bolt_via_socket"] == 42, "the one allowed path (Bolt through the socket) must work"
    leaks = {target: verdict for target, verdict in result["tcp"].items() if verdict == "connected"}
    assert not leaks, f"the sandbox reached: {leaks}"
    assert all(v.startswith("failed") for v in result["dns"].values()), result["dns"]
    assert result["interfaces"] == ["lo"], "the sandbox must have no network interface but loopback"
    assert result["fs"]["create"].startswith("denied") and result["fs"]["unlink"].startswith("denied"), result["fs"]


def test_the_forwarder_targets_only_the_configured_endpoint(sandbox_runner: SandboxRunner, docker_client: Any) -> None:
    forwarder = docker_client.containers.get(sandbox_runner.forwarder_container_id())
    settings = sandbox_runner.settings
    assert forwarder.attrs["Args"][-1] == f"{settings.neo4j_host}:{settings.neo4j_port}"
    host = forwarder.attrs["HostConfig"]
    assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    assert forwarder.attrs["Config"]["User"] == "10001:10001"
    assert SOCKET_DIR in {m["Destination"] for m in forwarder.attrs["Mounts"]}
