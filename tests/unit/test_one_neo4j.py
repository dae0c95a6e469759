"""One reader of "which Neo4j": serve, ``mnr run``, doctor, the benchmarks and the test fixtures
resolve it from the gateway's settings alike, whichever spelling or file names it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.config import load_settings, neo4j_connection
from gateway.connection import Neo4jConnection
from gateway.mnr.runner import MnrSession
from gateway.ops import neo4j_local
from gateway.ops.doctor import Doctor
from gateway.runner import settings_for

URI, PASSWORD = "bolt://db.example.test:7999", "pw-only-here"


@pytest.fixture(autouse=True)
def _only_what_the_test_sets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith(("GATEWAY_", "NEO4J_")):
            monkeypatch.delenv(key)
    # An empty state directory: falling back to the managed server would fail loudly.
    monkeypatch.setenv("CYPHER_GATEWAY_STATE", str(tmp_path / "state"))


def _everyone() -> dict[str, Neo4jConnection]:
    serve = settings_for(load_settings(), image="unused")  # what serve's runner is given
    doctor = Doctor(None)
    doctor._settings()
    assert doctor.settings is not None
    return {
        "serve": Neo4jConnection(
            uri=f"bolt://{serve.neo4j_host}:{serve.neo4j_port}", user=serve.neo4j_user,
            password=serve.neo4j_password, database=serve.database,
        ),
        "mnr run": MnrSession(runner=None).connection,
        "doctor": neo4j_connection(doctor.settings),
        "benchmarks and test fixtures": neo4j_local.resolve(start_managed=True),
    }  # fmt: skip


def _assert_all_reach(expected_uri: str, expected_password: str) -> None:
    for who, connection in _everyone().items():
        assert (who, connection.uri, connection.user) == (who, expected_uri, "neo4j")
        assert connection.password.get_secret_value() == expected_password, who


def test_only_the_gateway_spelling_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_NEO4J_URI", URI)
    monkeypatch.setenv("GATEWAY_NEO4J_PASSWORD", PASSWORD)
    _assert_all_reach(URI, PASSWORD)


def test_only_the_toml_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(f'neo4j_uri = "{URI}"\nneo4j_password = "{PASSWORD}"\n', encoding="utf-8")
    monkeypatch.setenv("GATEWAY_CONFIG", str(config))
    _assert_all_reach(URI, PASSWORD)


def test_nothing_set_and_no_managed_server_fails_for_everyone_alike() -> None:
    """The old harness reader fell back to an empty password; now each says the managed server is not ready."""
    with pytest.raises(Exception, match="managed Neo4j") as raised:
        neo4j_local.resolve()
    with pytest.raises(type(raised.value)):
        MnrSession(runner=None)
