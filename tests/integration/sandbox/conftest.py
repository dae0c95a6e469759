"""Fixtures for the sandbox and runner tests (loaded with ``pytest_plugins``).

Everything here uses the real services: ``neo4j_connection``,
``neo4j_driver``, ``docker_client`` and ``sandbox_image`` from tests/conftest.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gateway.config import GatewaySettings, connection_settings
from gateway.ops.neo4j_local import Neo4jConnection
from gateway.policy import Limits, load_policy
from gateway.runner import RunnerSettings, SandboxRunner, job_for, remove_leftovers, settings_for
from sandbox.wire import SandboxJob

ANALYZE = load_policy().tool("analyze")
LIMITS: Limits = ANALYZE.limits


def make_job(cypher: str, **overrides: Any) -> SandboxJob:
    """A job as the gateway builds it (the default policy's analyze limits, no result check)."""
    job = job_for(ANALYZE, query_id=uuid.uuid4().hex[:8], cypher=cypher, params={}, result_check=None)
    return SandboxJob.model_validate({**job.model_dump(), **overrides})


SettingsFactory = Callable[..., RunnerSettings]


@pytest.fixture(scope="session")
def gateway_settings(neo4j_connection: Neo4jConnection, sandbox_image: str) -> GatewaySettings:
    """The gateway's settings aimed at the test Neo4j and sandbox image (as `serve` would read them)."""
    return connection_settings(neo4j_connection, sandbox_image=sandbox_image, pool_size=2)


@pytest.fixture(scope="session")
def runner_settings(gateway_settings: GatewaySettings) -> SettingsFactory:
    """RunnerSettings made the way `serve` makes them; ``overrides`` set what a test varies."""

    def build(**overrides: Any) -> RunnerSettings:
        return settings_for(gateway_settings, **overrides)

    return build


@pytest.fixture(scope="module")
def sandbox_runner(runner_settings: SettingsFactory, docker_client: Any) -> Iterator[SandboxRunner]:
    """A running warm pool shared by a module's tests; it must leave nothing behind."""
    runner = SandboxRunner(runner_settings())
    ok, reason = runner.available()
    assert ok, f"the sandbox runner could not start: {reason}"
    assert runner.wait_ready(90), "the warm pool did not fill within 90 s"
    yield runner
    runner_id = runner.runner_id
    runner.close()
    assert remove_leftovers(docker_client, runner_id) == 0, "the runner leaked containers"


@pytest.fixture()
def bolt_env(neo4j_connection: Neo4jConnection) -> dict[str, str]:
    """Environment for running the sandbox program on the host, straight at the managed Neo4j."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CGW_")}
    env.update(
        CGW_NEO4J_URI=neo4j_connection.uri,
        CGW_NEO4J_USER=neo4j_connection.user,
        CGW_NEO4J_PASSWORD=neo4j_connection.password,
    )
    if neo4j_connection.database:
        env["CGW_DATABASE"] = neo4j_connection.database
    return env


# --- the seeded graph and its fingerprint ---------------------------------------------------------


@pytest.fixture(scope="module")
def seeded(neo4j_driver: Any) -> Iterator[str]:
    """A small graph under a run-unique label; yields that label. Removed afterwards."""
    label = f"Sbx{uuid.uuid4().hex[:10]}"
    with neo4j_driver.session() as session:
        session.run(
            f"UNWIND range(1, 30) AS i CREATE (:{label} {{i: i, name: 'n' + toString(i), layers: ['public']}})"
        ).consume()
        session.run(f"MATCH (a:{label}), (b:{label}) WHERE b.i = a.i + 1 CREATE (a)-[:NEXT {{w: a.i}}]->(b)").consume()
    yield label
    with neo4j_driver.session() as session:
        session.run(f"MATCH (n:{label}) DETACH DELETE n").consume()


def fingerprint(driver: Any, label: str) -> dict[str, Any]:
    """Counts and a checksum of every property under ``label``, plus the whole database's counts."""
    with driver.session() as session:
        nodes = session.run(f"MATCH (n:{label}) RETURN n.i AS i, properties(n) AS p, labels(n) AS l ORDER BY i").data()
        rels = session.run(f"MATCH (:{label})-[r]->() RETURN type(r) AS t, properties(r) AS p ORDER BY p.w").data()
        total_nodes = session.run("MATCH (n) RETURN count(n) AS c").single()["c"]
        total_rels = session.run("MATCH ()-[r]->() RETURN count(r) AS c").single()["c"]
    digest = hashlib.sha256(json.dumps([nodes, rels], sort_keys=True, default=str).encode()).hexdigest()
    return {
        "nodes": len(nodes),
        "relationships": len(rels),
        "checksum": digest,
        "db_nodes": total_nodes,
        "db_relationships": total_rels,
    }


def count_label(driver: Any, label: str) -> int:
    with driver.session() as session:
        return int(session.run(f"MATCH (n:`{label}`) RETURN count(n) AS c").single()["c"])
