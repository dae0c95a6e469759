"""Fixtures for the sandbox and runner tests: a seeded graph and the sandbox program's environment.

The services (Neo4j, Docker, the sandbox image, ``runner_settings``, ``sandbox_runner``)
come from tests/integration/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway.connection import Neo4jConnection
from gateway.runner import SandboxRunner, remove_leftovers
from tests.support.env import sandbox_program_env
from tests.support.graph import labelled_graph, unique_label


@pytest.fixture()
def cleanup(docker_client: Any) -> Iterator[list[SandboxRunner]]:
    """Runners a test starts (append them); each is closed after the test and must leave nothing behind."""
    runners: list[SandboxRunner] = []
    yield runners
    for runner in runners:
        runner.close()
        assert remove_leftovers(docker_client, runner.runner_id) == 0, "the runner leaked containers"


@pytest.fixture()
def bolt_env(neo4j_connection: Neo4jConnection) -> dict[str, str]:
    """Environment for running the sandbox program on the host, straight at the managed Neo4j."""
    return sandbox_program_env(neo4j_connection)


@pytest.fixture(scope="module")
def seeded(neo4j_driver: Any) -> Iterator[str]:
    """A small graph (30 nodes in a NEXT chain) under a run-unique label; yields that label."""
    label = unique_label("Sbx")
    with labelled_graph(
        neo4j_driver,
        label,
        [
            f"UNWIND range(1, 30) AS i CREATE (:{label} {{i: i, name: 'n' + toString(i), layers: ['public']}})",
            f"MATCH (a:{label}), (b:{label}) WHERE b.i = a.i + 1 CREATE (a)-[:NEXT {{w: a.i}}]->(b)",
        ],
    ):
        yield label
