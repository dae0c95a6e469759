"""Fixtures for the openCypher TCK run: a Neo4j the harness may empty, a Gateway over it, the tally.

Every TCK scenario starts from an empty graph and its queries see the whole database
(``MATCH (n) RETURN n``), so the TCK cannot share the test Neo4j, which holds other tests'
graphs for the whole session and may be a developer's own server (``NEO4J_URI``). It gets
a Neo4j of its own: a container of the release line's image (``neo4j_image``), on a Docker
network of its own that the sandbox's forwarder joins, as ``serve`` would for a Neo4j in a
container. The Gateway is built by ``gateway.compose`` over one warm pool for the whole run.

The tally of verdicts is printed at the end of the session (``run / equal / different /
refused by rule``); with ``CYPHER_GATEWAY_TCK_REPORT=<file>`` it is also written there as JSON.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.compose import compose
from gateway.config import load_settings
from gateway.connection import Neo4jConnection
from gateway.ops import neo4j_local
from gateway.policy import load_policy
from gateway.runner import SandboxRunner, remove_leftovers, settings_for
from gateway.runner.docker_io import owner_label
from tests.support.jobs import PATIENT
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.tck import tck_dir, tck_version
from tests.support.tck_run import TckHarness
from tests.support.tck_tally import Tally

REPORT_ENV = "CYPHER_GATEWAY_TCK_REPORT"
# Warm containers kept ready: the run is bounded by how fast Docker makes them, and a
# deeper pool absorbs the scenarios that need no sandbox (refused by the guard).
POOL_SIZE = 4

_TALLY = Tally()


@dataclass(frozen=True)
class TckNeo4j:
    driver: Any  # the harness's driver (write rights), through the container's published port
    uri: str  # the address inside the container network, where the forwarder connects
    password: str
    network: str


@pytest.fixture(scope="session")
def tck_neo4j(neo4j_image: str, docker_client: Any) -> Iterator[TckNeo4j]:
    """A fresh Neo4j of the release line under test, only for the TCK (it empties it at will)."""
    import neo4j

    network = docker_client.networks.create(f"cgw-tck-{uuid.uuid4().hex[:8]}")
    password = secrets.token_hex(12)
    container = None
    try:
        container = docker_client.containers.run(
            neo4j_image, detach=True, network=network.name, hostname="tck-neo4j",
            environment={"NEO4J_AUTH": f"neo4j/{password}"}, ports={"7687/tcp": ("127.0.0.1", None)},
            labels={"cypher-gateway.role": "tck-neo4j", "cypher-gateway.owner": owner_label()},
        )  # fmt: skip
        container.reload()
        port = container.attrs["NetworkSettings"]["Ports"]["7687/tcp"][0]["HostPort"]
        published = Neo4jConnection(uri=f"bolt://127.0.0.1:{port}", user="neo4j", password=password)
        # The project's own bounded wait (as for the managed server): a busy machine starts it slowly.
        neo4j_local.wait_until_ready(published)
        with neo4j.GraphDatabase.driver(published.uri, auth=(published.user, password)) as driver:
            _warm_up(driver)
            yield TckNeo4j(driver=driver, uri="bolt://tck-neo4j:7687", password=password, network=network.name)
    finally:
        if container is not None:
            container.remove(force=True)
        network.remove()


def _warm_up(driver: Any) -> None:
    # A fresh server plans its first queries slowly (JIT, caches): past the policy's 5 s
    # timeout on a busy machine. The TCK's first scenarios should not pay for that.
    for statement in (
        "CREATE (:Warm {i: 1})-[:T]->(:Warm {i: 2})",
        "MATCH (a)-[r]->(b) RETURN a, r, b, [(a)-->(x) | x.i] AS l, count { (b)--() } AS c",
        "UNWIND range(1, 100) AS i WITH i ORDER BY i DESC RETURN collect(i)[0] AS top, date() AS d",
        "MATCH (n) DETACH DELETE n",
    ):
        driver.execute_query(statement, database_="neo4j")


@pytest.fixture(scope="session")
def tck_harness(tck_neo4j: TckNeo4j, sandbox_image: str, docker_client: Any) -> Iterator[TckHarness]:
    settings = load_settings(
        neo4j_uri=tck_neo4j.uri, neo4j_password=tck_neo4j.password, neo4j_database="neo4j",
        sandbox_image=sandbox_image, pool_size=POOL_SIZE,
    )  # fmt: skip
    # A patient wait for a sandbox: scenarios come back to back on a shared 2-core machine.
    runner = SandboxRunner(settings_for(settings, forwarder_network=tck_neo4j.network), PATIENT)
    # The TCK's graphs carry no layers property and its expected tables none either: this run opts
    # into `untagged: global` (the policy setting for such graphs) so every element is visible. Its
    # expected tables hold every property: the default policy without its property list.
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    policy = policy.model_copy(update={"scope": policy.scope.model_copy(update={"untagged": "global"})})
    composed = compose(settings, runner=runner, policy=policy, audit=False)
    try:
        assert runner.wait_ready(120), f"the sandbox pool did not fill: {runner.available()}"
        _TALLY.started = time.monotonic()
        yield TckHarness(tck_neo4j.driver, composed.gateway, database="neo4j", tck_root=tck_dir())
    finally:
        _TALLY.finished = time.monotonic()
        runner.close()
        assert remove_leftovers(docker_client, runner.runner_id) == 0, "the runner leaked containers"


@pytest.fixture(scope="session")
def tck_tally() -> Tally:
    return _TALLY


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _TALLY.verdicts:
        return
    terminalreporter.section(f"openCypher TCK {tck_version()} through the gateway")
    for line in _TALLY.table():
        terminalreporter.write_line(line)
    target = os.environ.get(REPORT_ENV)
    if target:
        Path(target).write_text(json.dumps(_TALLY.report(tck_version()), indent=1) + "\n", encoding="utf-8")
        terminalreporter.write_line(f"report written to {target}")
