"""The sandbox's one-host egress, checked live: ``sandbox/probe.py`` in the box a query gets.

``run_probe`` starts the probe with the very spec the warm pool starts sandboxes with
(``SandboxRunner.sandbox_spec()``: ``--network none``, the socket volume read-only, every
hardening option), only its entrypoint and request added, and returns its report.
``doctor_request`` is what ``cypher-gateway doctor`` asks of it: addresses on this machine
only (the Neo4j endpoint dialled directly, the Docker networks' gateways on Neo4j's port),
so even a broken box sends nothing beyond the host.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pydantic import TypeAdapter

from gateway.runner import RunnerSettings
from gateway.runner.docker_io import raw_socket
from sandbox.probe import ProbeReport, ProbeRequest
from sandbox.wire import SOCKET_PATH, SandboxEnv, to_json

PROBE_TIMEOUT_S = 120.0


class ProbeFailed(Exception):
    """The probe container did not produce a report; the message carries its output's tail."""


def run_probe(
    client: Any, spec: dict[str, Any], request: ProbeRequest, *, account: bytes | None = None,
    timeout: float = PROBE_TIMEOUT_S,
) -> ProbeReport:  # fmt: skip
    """The probe's report; ``account`` (a credentials line) goes on stdin, as the pool sends it, for ``query``."""
    spec = {**spec, "entrypoint": ["python3", "-m", "sandbox.probe"], "stdin_open": account is not None}
    spec["environment"] = {**spec.get("environment", {}), SandboxEnv.PROBE: to_json(request)}
    # The report is the probe's only output and holds no secret: keep Docker's log of it to read it.
    spec["log_config"] = {"Type": "json-file", "Config": {}}
    container = client.containers.create(**spec)
    try:
        if account is not None:
            attached = container.attach_socket(params={"stdin": 1, "stream": 1})
            container.start()
            sock = raw_socket(attached)
            sock.sendall(account)
            sock.close()
        else:
            container.start()
        status = container.wait(timeout=timeout)
        stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace").strip()
        if status.get("StatusCode") != 0 or not stdout:
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            raise ProbeFailed(f"the probe exited with {status.get('StatusCode')}: {stderr[-1500:]}")
        return _REPORT.validate_json(stdout.splitlines()[-1])
    finally:
        container.remove(force=True)


_REPORT = TypeAdapter(ProbeReport)


def network_gateways(client: Any) -> list[str]:
    """The host's address on each Docker network (a container's most likely way to the host)."""
    found: list[str] = []
    for network in client.networks.list():
        network.reload()
        for config in (network.attrs.get("IPAM") or {}).get("Config") or []:
            gateway = config.get("Gateway") or _first_host(config.get("Subnet"))
            if gateway and gateway not in found:
                found.append(gateway)
    return found


def _first_host(subnet: str | None) -> str | None:
    # The default bridge may list only its subnet; Docker gives the bridge its first address.
    if not subnet:
        return None
    network = ipaddress.ip_network(subnet, strict=False)
    if network.version != 4:
        return None
    first = next(network.hosts(), None)
    return str(first) if first is not None else None


def doctor_request(settings: RunnerSettings, gateways: list[str]) -> ProbeRequest:
    host, port = settings.neo4j_host, settings.neo4j_port
    try:
        ipaddress.ip_address(host)
        names: list[str] = []
    except ValueError:
        names = [host]  # a sandbox must not even resolve the Neo4j host's name
    targets = [(host, port), *[(gateway, port) for gateway in gateways if gateway != host]]
    return ProbeRequest(targets=targets, names=names, socket_path=SOCKET_PATH)
