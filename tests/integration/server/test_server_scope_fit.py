"""``serve`` holds the policy's scope against the graph at start-up: a scope property that occurs
nowhere is said loudly on stderr, and every answer carries ``degraded: ["scope:property-missing"]``
with the reason and the fix (the answer itself stays fail-closed: nothing untagged comes back)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from gateway.connection import Neo4jConnection
from tests.support.env import server_env
from tests.support.graph import labelled_graph
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH, GATEWAY_CLI, REPO


def test_a_scope_property_the_graph_never_carries_degrades_every_answer(
    neo4j_connection: Neo4jConnection, neo4j_driver: Any, sandbox_image: str, tmp_path: Path
) -> None:
    unique = uuid.uuid4().hex[:8]
    prop, label = f"layers_{unique}", f"ServeFit{unique}"
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        ALL_PROPERTIES_POLICY_PATH.read_text(encoding="utf-8").replace(
            "layers_property: layers", f"layers_property: {prop}"
        ),
        encoding="utf-8",
    )
    env = server_env(neo4j_connection, sandbox_image, tmp_path / "audit.jsonl", GATEWAY_POLICY_FILE=str(policy))
    errlog_path = tmp_path / "stderr.log"

    async def session() -> Any:
        params = StdioServerParameters(command=GATEWAY_CLI, args=["serve"], env=env, cwd=str(REPO))
        with errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=90) as client:
                return await client.call_tool("analyze", {"cypher": f"MATCH (n:{label}) RETURN n.name AS name"})

    # The graph's own scope property is named otherwise (Mindreader's layer_ids).
    with labelled_graph(neo4j_driver, label, [f"CREATE (:{label} {{name: 'secret', layer_ids: ['x']}})"]):
        result = anyio.run(session)
    stderr = errlog_path.read_text()
    assert f"WARNING: the policy's scope property '{prop}' occurs on no node or relationship" in stderr
    assert "set scope.layers_property to the property your graph uses" in stderr
    content = result.structured_content
    assert not result.is_error and content["degraded"] == ["scope:property-missing"], content
    assert "set scope.layers_property" in content["degradedReason"]
    assert content["rows"] == []  # fail closed all the same
