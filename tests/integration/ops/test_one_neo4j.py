"""The real server, named only by ``GATEWAY_NEO4J_URI``/``GATEWAY_NEO4J_PASSWORD``: doctor, the MNR
harness and the benchmarks' resolver all reach it (tests/unit/test_one_neo4j.py compares the resolutions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.connection import Neo4jConnection
from gateway.mnr import seed
from gateway.mnr.runner import connection_from_env
from gateway.ops import neo4j_local
from gateway.ops.doctor import Doctor

pytestmark = pytest.mark.integration


def test_the_gateway_spelling_alone_reaches_the_real_server(
    neo4j_connection: Neo4jConnection, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key in list(os.environ):
        if key.startswith(("GATEWAY_", "NEO4J_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("CYPHER_GATEWAY_STATE", str(tmp_path))  # no managed server to fall back on
    monkeypatch.setenv("GATEWAY_NEO4J_URI", neo4j_connection.uri)
    monkeypatch.setenv("GATEWAY_NEO4J_PASSWORD", neo4j_connection.password.get_secret_value())
    doctor = Doctor(None)
    doctor._settings()
    assert doctor._neo4j().startswith("Neo4j listens at")
    assert doctor.target is not None and doctor.target.uri == neo4j_connection.uri
    assert neo4j_local.resolve(start_managed=True).uri == neo4j_connection.uri
    driver = seed.connect(connection_from_env())  # the harness's own driver: verify_connectivity() passed
    try:
        assert driver.execute_query("RETURN 1 AS one").records[0]["one"] == 1
    finally:
        driver.close()
