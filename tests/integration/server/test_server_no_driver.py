"""The gateway process never loads the neo4j driver (nor gateway/ops/), even after a full request cycle.

A fresh interpreter composes the gateway from settings exactly as ``serve`` does (real
runner, real sandbox, real Neo4j), answers an MCP tool call in-process through the SDK's
client, and reports what it imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gateway.connection import Neo4jConnection
from tests.support.env import server_env
from tests.support.paths import REPO
from tests.support.server import SeededGraph

PROGRAM = r"""
import json, sys, anyio
from mcp import Client
from gateway.config import load_settings
from gateway.server import build_server, stdio_resolver
from gateway.compose import compose
from gateway.domain import Principal

settings = load_settings()
composed = compose(settings)
principal = Principal(name="probe", scope=frozenset(settings.stdio_scope))
server = build_server(composed.gateway, stdio_resolver(principal), resource_principal=principal)

async def main():
    async with Client(server) as client:
        result = await client.call_tool("analyze", {"cypher": sys.argv[1]})
        schema = await client.call_tool("schema", {})
        return result.structured_content, schema.structured_content

try:
    answer, schema = anyio.run(main)
finally:
    composed.close()
print(json.dumps({"answer": answer, "schema": schema, "problems": composed.problems,
                  "neo4j_loaded": sorted(m for m in sys.modules if m == "neo4j" or m.startswith("neo4j.")),
                  "ops_loaded": sorted(m for m in sys.modules if m.startswith(("gateway.ops", "gateway.mnr")))}))
"""


def test_full_request_cycle_never_imports_the_driver(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph, tmp_path: Path
) -> None:
    env = server_env(neo4j_connection, sandbox_image, tmp_path / "audit.jsonl", GATEWAY_STDIO_SCOPE=seeded_graph.layer)
    cypher = f"MATCH (n:{seeded_graph.label}) WHERE n.kind = 'fact' RETURN count(n) AS c"
    done = subprocess.run([sys.executable, "-c", PROGRAM, cypher], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=240, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["problems"] == []
    assert report["answer"]["rows"] == [[seeded_graph.many]], report  # the cycle really reached Neo4j
    assert seeded_graph.label in report["schema"]["labels"]
    assert "blob" in report["schema"]["propertyKeys"]
    assert report["neo4j_loaded"] == []
    assert report["ops_loaded"] == []  # nor the operator tooling (tests/unit/test_layers.py reads the imports)
