"""Fixtures for the MCP server tests (loaded with ``pytest_plugins``).

The server under test is the real ``cypher-gateway serve`` process, talking to
the real sandbox image and the real Neo4j from tests/conftest.py. Nothing here
skips: a missing service fails the test with what is missing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.ops.neo4j_local import Neo4jConnection

REPO = Path(__file__).resolve().parent.parent
GATEWAY_CLI = str(Path(sys.executable).parent / "cypher-gateway")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class SeededGraph:
    """A graph under a run-unique label, visible to ``layer`` only."""

    label: str
    layer: str
    repository: str
    task_id: str
    many: int  # nodes with small properties (row truncation)
    blobs: int  # nodes with a large property (byte truncation)
    blob_chars: int


@pytest.fixture(scope="session")
def seeded_graph(neo4j_driver: Any) -> Iterator[SeededGraph]:
    graph = SeededGraph(
        label=f"Srv{uuid.uuid4().hex[:10]}", layer=f"layer-{uuid.uuid4().hex[:6]}",
        repository="acme/widgets", task_id="task-42", many=150, blobs=60, blob_chars=10_000,
    )  # fmt: skip
    with neo4j_driver.session() as session:
        session.run(
            f"UNWIND range(1, $n) AS i CREATE (:{graph.label} {{i: i, kind: 'fact', repository: $repo,"
            " taskId: $task, text: 'fact ' + toString(i), layers: [$layer]})",
            n=graph.many,
            repo=graph.repository,
            task=graph.task_id,
            layer=graph.layer,
        ).consume()
        session.run(
            f"UNWIND range(1, $n) AS i CREATE (:{graph.label} {{i: 1000 + i, kind: 'blob', repository: $repo,"
            " taskId: $task, blob: $blob, layers: [$layer]})",
            n=graph.blobs,
            repo=graph.repository,
            task=graph.task_id,
            layer=graph.layer,
            blob="x" * graph.blob_chars,
        ).consume()
    yield graph
    with neo4j_driver.session() as session:
        session.run(f"MATCH (n:{graph.label}) DETACH DELETE n").consume()


def server_env(connection: Neo4jConnection, sandbox_image: str, audit_path: Path, **extra: str) -> dict[str, str]:
    """Environment for a ``cypher-gateway serve`` child aimed at the test Neo4j and sandbox image."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "NEO4J_"))}
    env.update(
        NEO4J_URI=connection.uri,
        NEO4J_USER=connection.user,
        NEO4J_PASSWORD=connection.password,
        GATEWAY_SANDBOX_IMAGE=sandbox_image,
        GATEWAY_POOL_SIZE="2",
        GATEWAY_AUDIT_PATH=str(audit_path),
    )
    if connection.database:
        env["NEO4J_DATABASE"] = connection.database
    env.update(extra)
    return env


@dataclass
class HttpServer:
    url: str
    tokens: dict[str, str]  # principal name -> token
    audit_path: Path
    process: subprocess.Popen[bytes]
    log_path: Path


def start_http_server(env: dict[str, str], args: list[str], log_path: Path, port: int) -> subprocess.Popen[bytes]:
    log = log_path.open("wb")
    process = subprocess.Popen(
        [GATEWAY_CLI, "serve", "--transport", "http", "--port", str(port), *args],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the HTTP server exited with {process.returncode}:\n{log_path.read_text()}", pytrace=False)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    pytest.fail(f"the HTTP server did not listen within 60 s:\n{log_path.read_text()}", pytrace=False)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def http_server(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HttpServer]:  # fmt: skip
    """A real ``serve --transport http`` process with two principals in a tokens file."""
    workdir = tmp_path_factory.mktemp("http-server")
    tokens = {"agent-in-scope": uuid.uuid4().hex + uuid.uuid4().hex, "agent-no-scope": uuid.uuid4().hex * 2}
    (workdir / "tokens.toml").write_text(
        f'[[principal]]\nname = "agent-in-scope"\nscope = ["{seeded_graph.layer}"]\n'
        f'token = "{tokens["agent-in-scope"]}"\n\n'
        f'[[principal]]\nname = "agent-no-scope"\nscope = []\ntoken = "{tokens["agent-no-scope"]}"\n',
        encoding="utf-8",
    )
    audit_path = workdir / "audit.jsonl"
    port = free_port()
    env = server_env(neo4j_connection, sandbox_image, audit_path, GATEWAY_HTTP_MAX_BODY_BYTES="64000")
    log_path = workdir / "server.log"
    process = start_http_server(env, ["--tokens-file", str(workdir / "tokens.toml")], log_path, port)
    yield HttpServer(f"http://127.0.0.1:{port}/mcp", tokens, audit_path, process, log_path)
    stop(process)
