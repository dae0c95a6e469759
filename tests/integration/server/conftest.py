"""Fixtures for the MCP server tests.

The server under test is the real ``cypher-gateway serve`` process, talking to the
real sandbox image and the real Neo4j (tests/integration/conftest.py). Nothing here
skips: a missing service fails the test with what is missing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.connection import Neo4jConnection
from tests.support.env import server_env
from tests.support.graph import labelled_graph, unique_label
from tests.support.ports import free_port
from tests.support.server import HttpServer, SeededGraph, start_http_server, stop


@pytest.fixture(scope="session")
def seeded_graph(neo4j_driver: Any) -> Iterator[SeededGraph]:
    graph = SeededGraph(
        label=unique_label("Srv"), layer=f"layer-{uuid.uuid4().hex[:6]}",
        repository="acme/widgets", task_id="task-42", many=150, blobs=60, blob_chars=10_000,
    )  # fmt: skip
    seed = [
        f"UNWIND range(1, $n) AS i CREATE (:{graph.label} {{i: i, kind: 'fact', repository: $repo,"
        " taskId: $task, text: 'fact ' + toString(i), layers: [$layer]})",
        f"UNWIND range(1, $blobs) AS i CREATE (:{graph.label} {{i: 1000 + i, kind: 'blob', repository: $repo,"
        " taskId: $task, blob: $blob, layers: [$layer]})",
    ]
    with labelled_graph(
        neo4j_driver, graph.label, seed, n=graph.many, blobs=graph.blobs, repo=graph.repository,
        task=graph.task_id, layer=graph.layer, blob="x" * graph.blob_chars,
    ):  # fmt: skip
        yield graph


@pytest.fixture(scope="module")
def http_server(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HttpServer]:  # fmt: skip
    """A real ``serve --transport http`` process with two principals in a tokens file (one with a named list)."""
    workdir = tmp_path_factory.mktemp("http-server")
    tokens = {"agent-in-scope": uuid.uuid4().hex + uuid.uuid4().hex, "agent-no-scope": uuid.uuid4().hex * 2}
    (workdir / "tokens.toml").write_text(
        f'[[principal]]\nname = "agent-in-scope"\nscope = ["{seeded_graph.layer}"]\n'
        f'token = "{tokens["agent-in-scope"]}"\n\n'
        f'[[principal]]\nname = "agent-no-scope"\nscope = []\ntoken = "{tokens["agent-no-scope"]}"\n'
        '[principal.attributes]\nrepositories = ["acme/api"]\n',
        encoding="utf-8",
    )
    audit_path = workdir / "audit.jsonl"
    port = free_port()
    env = server_env(neo4j_connection, sandbox_image, audit_path, GATEWAY_HTTP_MAX_BODY_BYTES="64000")
    log_path = workdir / "server.log"
    process = start_http_server(env, ["--tokens-file", str(workdir / "tokens.toml")], log_path, port)
    yield HttpServer(f"http://127.0.0.1:{port}/mcp", tokens, audit_path, process, log_path)
    stop(process)
