"""Neo4j as a container: the forwarder joins Neo4j's network, the sandbox still has none.

With a fresh Neo4j the expected count is exact, and the probe shows that from inside
the sandbox the Neo4j container's other port (HTTP 7474) is unreachable while Bolt
through the socket works.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from gateway.config import load_settings
from gateway.ops.egress import run_probe
from gateway.runner import SandboxRunner, remove_leftovers, settings_for
from gateway.runner.contract import credentials_line
from sandbox.probe import ProbeRequest
from sandbox.wire import SOCKET_PATH
from tests.support.jobs import PATIENT, make_job

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x


def test_forwarder_on_the_neo4j_containers_network(sandbox_image: str, neo4j_image: str, docker_client: Any) -> None:
    from testcontainers.community.neo4j import Neo4jContainer

    network = docker_client.networks.create(f"cgw-neo4j-{uuid.uuid4().hex[:8]}")
    try:
        with Neo4jContainer(image=neo4j_image, password="container-pw").with_kwargs(
            network=network.name, hostname="neo4j"
        ) as neo4j_container:
            with neo4j_container.get_driver() as driver:
                driver.execute_query("UNWIND range(1, 23) AS i CREATE (:Seed {i: i})")
            gateway_settings = load_settings(
                neo4j_uri="bolt://neo4j:7687", neo4j_password="container-pw", neo4j_database="neo4j",
                sandbox_image=sandbox_image, pool_size=1,
            )  # fmt: skip
            settings = settings_for(gateway_settings, forwarder_network=network.name)
            runner = SandboxRunner(settings, PATIENT)
            try:
                assert runner.wait_ready(60), runner.available()
                result = runner.run(make_job("MATCH (n:Seed) RETURN count(n) AS c"))
                assert result.ok and result.rows == [[23]], result
                neo4j_container.get_wrapped_container().reload()
                ip = neo4j_container.get_wrapped_container().attrs["NetworkSettings"]["Networks"][network.name][
                    "IPAddress"
                ]
                request = ProbeRequest(targets=[(ip, 7474), (ip, 7687)], names=["neo4j"], socket_path=SOCKET_PATH,
                                       query=True)  # fmt: skip
                account = credentials_line("neo4j", "container-pw")
                probe = run_probe(docker_client, runner.sandbox_spec(), request, account=account)
                assert probe.answer == 42, probe.query_error
                assert all(v.startswith("blocked") for v in probe.tcp.values()), probe.tcp
                assert probe.dns["neo4j"].startswith("failed"), probe.dns
                assert probe.breaches() == []
            finally:
                runner.close()
                assert remove_leftovers(docker_client, runner.runner_id) == 0
    finally:
        network.remove()
