"""Two gateway replicas sharing one Neo4j, a load split between them, nothing lost.

The scale-out path of docs/scaling.md as far as one machine can show it: two stateless
``serve --transport http`` processes with the same tokens file, each with its own runner
(its own forwarder and sandboxes; on this machine both use the one Docker engine), and
calls sent to either at random. Every call is answered by the replica it was sent to, and
each replica's audit log holds exactly the calls it answered.
"""

from __future__ import annotations

import json
import socket
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import TextContent

from gateway.audit import AuditLog
from gateway.connection import Neo4jConnection
from gateway.runner.docker_io import LABEL_OWNER, LABEL_ROLE
from tests.support.env import server_env
from tests.support.ports import free_port
from tests.support.server import SeededGraph, start_http_server, stop

CALLS = 24


def _call(url: str, token: str, cypher: str) -> dict[str, Any]:
    """One analyze call; a "busy" answer is asked again after its hint, as an agent would."""

    async def go() -> dict[str, Any]:
        async with (
            create_mcp_http_client(headers={"authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client,
        ):
            for _ in range(30):
                result = await client.call_tool("analyze", {"cypher": cypher})
                content = result.content[0]
                assert isinstance(content, TextContent)
                body: dict[str, Any] = json.loads(content.text)
                if not result.is_error or body["error"]["code"] != "busy":
                    return body
                await anyio.sleep(body["error"]["retryAfterMs"] / 1000)
            return body

    return anyio.run(go)


def test_two_replicas_share_one_neo4j_and_lose_nothing(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph, tmp_path: Path,
    docker_client: Any,
) -> None:  # fmt: skip
    token = uuid.uuid4().hex * 2
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[principal]]\nname = "agent"\nscope = ["{seeded_graph.layer}"]\ntoken = "{token}"\n')
    replicas = []
    for name in ("replica-a", "replica-b"):
        workdir = tmp_path / name
        workdir.mkdir()
        port = free_port()
        env = server_env(neo4j_connection, sandbox_image, workdir / "audit.jsonl")
        process = start_http_server(env, ["--tokens-file", str(tokens)], workdir / "server.log", port)
        replicas.append((f"http://127.0.0.1:{port}/mcp", workdir / "audit.jsonl", process))
    try:
        # Each replica runs its own forwarder: nothing is shared between them but Neo4j.
        owners = {f"{socket.gethostname()}:{process.pid}" for _, _, process in replicas}
        forwarders = docker_client.api.containers(filters={"label": [f"{LABEL_ROLE}=forwarder"]})
        assert owners <= {c["Labels"].get(LABEL_OWNER) for c in forwarders}

        cypher = f"MATCH (n:{seeded_graph.label}) WHERE n.kind = 'fact' RETURN count(n) AS c"
        sent_to = [i % 2 for i in range(CALLS)]
        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(lambda r: _call(replicas[r][0], token, cypher), sent_to))
    finally:
        for _, _, process in replicas:
            stop(process)

    failed = [a for a in answers if "error" in a]
    assert not failed, failed
    assert all(a["rows"] == [[seeded_graph.many]] for a in answers), "every call reached Neo4j through a sandbox"
    logs = [AuditLog(audit).read() for _, audit, _ in replicas]
    answered = [[ln for ln in lines if ln["tool"] == "analyze" and ln["decision"] == "answered"] for lines in logs]
    assert [len(a) for a in answered] == [sent_to.count(0), sent_to.count(1)]
    query_ids = {a["queryId"] for a in answers}
    assert len(query_ids) == CALLS
    assert query_ids == {ln["query_id"] for lines in answered for ln in lines}
