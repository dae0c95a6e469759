"""A second managed Neo4j that speaks only TLS: Bolt with TLS required, HTTPS instead of HTTP,
with a CA and a server certificate (for ``localhost``) made by the test.

It runs under its own state directory (``<state>/neo4j-tls``) on free ports, started and
stopped with the ``cypher-gateway neo4j`` command as an operator would, and is stopped when
the session ends. Nothing here skips: a server that cannot start fails the tests.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gateway.connection import Neo4jConnection
from gateway.managed_neo4j import TLS_HOST
from gateway.paths import state_dir
from tests.support.graph import labelled_graph, unique_label
from tests.support.paths import GATEWAY_CLI
from tests.support.ports import free_port
from tests.support.tls import Certificates, make_certificates


@dataclass(frozen=True)
class TlsNeo4j:
    connection: Neo4jConnection  # bolt+s://localhost:<port>, https://localhost:<port>
    bolt_port: int
    https_port: int
    certificates: Certificates


def _neo4j(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GATEWAY_CLI, "neo4j", *args], env=env, capture_output=True, text=True, timeout=400)


@pytest.fixture(scope="session")
def tls_neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsNeo4j]:
    certificates = make_certificates(tmp_path_factory.mktemp("tls"), TLS_HOST)
    bolt, https = free_port(), free_port()
    env = {
        **os.environ,
        "CYPHER_GATEWAY_STATE": str(state_dir() / "neo4j-tls"),
        "CYPHER_GATEWAY_NEO4J_PORT": str(bolt),
        "CYPHER_GATEWAY_NEO4J_HTTP_PORT": str(https),
    }
    _neo4j(env, "stop")  # one an interrupted run left behind has other certificates
    started = _neo4j(env, "start", "--tls", str(certificates.server_dir))
    if started.returncode != 0:
        pytest.fail(f"the TLS-only Neo4j did not start:\n{started.stderr[-3000:]}", pytrace=False)
    try:
        facts = json.loads(_neo4j(env, "status", "--json").stdout)
        connection = Neo4jConnection(
            uri=facts["uri"], user=facts["user"], password=facts["password"], database=facts["database"],
            http_uri=facts["http_uri"],
        )  # fmt: skip
        assert connection.uri == f"bolt+s://{TLS_HOST}:{bolt}", connection.uri
        yield TlsNeo4j(connection, bolt, https, certificates)
    finally:
        _neo4j(env, "stop")


@pytest.fixture(scope="session")
def tls_driver(tls_neo4j: TlsNeo4j) -> Iterator[Any]:
    """A direct driver to the TLS server (write rights, for seeding), trusting the test's CA."""
    import neo4j

    connection = tls_neo4j.connection
    driver = neo4j.GraphDatabase.driver(
        f"bolt://{TLS_HOST}:{tls_neo4j.bolt_port}", encrypted=True,
        auth=(connection.user, connection.password.get_secret_value()),
        trusted_certificates=neo4j.TrustCustomCAs(str(tls_neo4j.certificates.ca_file)),
    )  # fmt: skip
    yield driver
    driver.close()


@pytest.fixture(scope="session")
def tls_seeded(tls_driver: Any) -> Iterator[str]:
    """Three global nodes (layers: []) on the TLS server under a run-unique label; yields the label."""
    label = unique_label("Tls")
    with labelled_graph(tls_driver, label, [f"UNWIND range(1, 3) AS i CREATE (:{label} {{i: i, layers: []}})"]):
        yield label
