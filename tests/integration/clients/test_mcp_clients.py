"""MCP clients nobody here wrote, driving the real ``cypher-gateway serve``: the MCP Inspector CLI
(2.12 and 0.15, from npm: ``scripts/mcp-clients.sh``) and the fastmcp client (a dev dependency).

Each must list every tool, run a query, and show a rejected write as a readable error: the
JSON body ``{"error": {"code", "rule", ...}}`` as text, which every one of them prints. The
fastmcp client also calls every tool, provokes one error of each code a client can cause on
demand, and reads both resources, over stdio and over HTTP with a bearer token.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent
from mcp_types.version import LATEST_MODERN_VERSION

from gateway.connection import Neo4jConnection
from tests.support.env import server_env
from tests.support.paths import GATEWAY_CLI, REPO
from tests.support.ports import free_port
from tests.support.server import start_http_server, stop

TOOLS = {"analyze", "check", "recall", "schema"}
WRITE = "CREATE (n) RETURN n"
# The launcher's entry point per Inspector version (the npm package's layout changed in 2.x).
INSPECTORS = {
    "inspector-2.12": "clients/launcher/build/index.js",
    "inspector-0.15": "cli/build/cli.js",
}


def _inspector(name: str) -> Path:
    """The installed CLI of ``name``, where scripts/mcp-clients.sh puts it (keyed by its lock file)."""
    lock = REPO / "tests" / "clients" / name / "package-lock.json"
    xdg = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache = Path(os.environ.get("CYPHER_GATEWAY_CACHE") or xdg / "cypher-gateway")
    target = cache / "mcp-clients" / f"{name}-{hashlib.sha256(lock.read_bytes()).hexdigest()[:12]}"
    entry = target / "node_modules" / "@modelcontextprotocol" / "inspector" / INSPECTORS[name]
    assert entry.exists(), f"{name} is not installed ({entry} missing): run `bash scripts/mcp-clients.sh`"
    return entry


@pytest.fixture(scope="module")
def env(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    return server_env(neo4j_connection, sandbox_image, tmp_path_factory.mktemp("clients") / "audit.jsonl")


@pytest.fixture(scope="module")
def http_server(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A served HTTP endpoint with a bearer token: (url, token)."""
    where = tmp_path_factory.mktemp("http")
    token = uuid.uuid4().hex * 2
    tokens = where / "tokens.toml"
    tokens.write_text(f'[[principal]]\nname = "agent"\nscope = []\ntoken = "{token}"\n', encoding="utf-8")
    port = free_port()
    process = start_http_server(env, ["--tokens-file", str(tokens)], where / "server.log", port)
    try:
        yield f"http://127.0.0.1:{port}/mcp", token
    finally:
        stop(process)


def _error_body(text: str) -> dict[str, Any]:
    body = json.loads(text)
    assert set(body) == {"error"}, body
    return dict(body["error"])


# --- the MCP Inspector CLI ---------------------------------------------------------------------------


def _run_inspector(name: str, target: list[str], *args: str, env: dict[str, str] | None = None) -> tuple[int, Any]:
    command = ["node", str(_inspector(name)), "--cli", *target, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{name} printed no JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")


def _call(
    name: str, target: list[str], tool: str, arguments: dict[str, str], env: dict[str, str] | None
) -> tuple[int, Any]:
    if name == "inspector-2.12":
        return _run_inspector(name, target, "--method", "tools/call", "--tool-name", tool,
                              "--tool-args-json", json.dumps(arguments), env=env)  # fmt: skip
    # 0.15 takes key=value pairs.
    pairs = [f"{key}={value}" for key, value in arguments.items()]
    return _run_inspector(name, target, "--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs, env=env)


def _inspector_session(name: str, target: list[str], env: dict[str, str] | None = None) -> None:
    code, listed = _run_inspector(name, target, "--method", "tools/list", env=env)
    assert code == 0 and {tool["name"] for tool in listed["tools"]} == TOOLS, listed
    code, checked = _call(name, target, "check", {"cypher": "RETURN 1 AS one", "tool": "analyze"}, env)
    assert code == 0 and json.loads(checked["content"][0]["text"])["allowed"] is True, checked
    code, rejected = _call(name, target, "analyze", {"cypher": WRITE}, env)
    assert rejected["isError"] is True and "structuredContent" not in rejected, rejected
    error = _error_body(rejected["content"][0]["text"])
    assert error["code"] == "rejected" and error["rule"] == "write.clause", error
    code, resources = _run_inspector(name, target, "--method", "resources/list", env=env)
    assert code == 0 and {r["uri"] for r in resources["resources"]} >= {"policy://active"}, resources


@pytest.mark.parametrize("name", sorted(INSPECTORS))
def test_inspector_over_stdio(name: str, env: dict[str, str]) -> None:
    # Inspector 2.12 gives a stdio server no environment of its own: pass each setting with -e.
    keep = ("GATEWAY_", "NEO4J_", "CYPHER_GATEWAY_", "PATH", "HOME")
    passed = [arg for key, value in env.items() if key.startswith(keep) for arg in ("-e", f"{key}={value}")]
    target = [*passed, GATEWAY_CLI, "serve"] if name == "inspector-2.12" else [GATEWAY_CLI, "serve"]
    # 0.15 hands its own environment to the server.
    _inspector_session(name, target, env=env if name == "inspector-0.15" else None)


def test_inspector_2_12_over_http_with_a_token(http_server: tuple[str, str]) -> None:
    url, token = http_server
    _inspector_session("inspector-2.12", [url, "--transport", "http", "--header", f"Authorization: Bearer {token}"])


# --- the fastmcp client ------------------------------------------------------------------------------


RECALL = "MATCH (t:Task {taskId: $taskId}) WHERE $repository IS NOT NULL RETURN t.taskId AS task"
# Operator work the guard allows and Neo4j stops at the policy's 5 s timeout.
SLOW = "UNWIND range(1, 1000000) AS x UNWIND range(1, 1000000) AS y WITH x WHERE x % 7 = 99 RETURN count(x) AS c"


async def _fastmcp_session(transport: Any) -> None:
    async with FastMCPClient(transport) as client:
        tools = await client.list_tools()
        assert {tool.name for tool in tools} == TOOLS
        assert all(tool.title for tool in tools), [tool.name for tool in tools if not tool.title]
        # Every tool answers, its structured content valid against its own output schema (fastmcp checks).
        checked = await client.call_tool("check", {"cypher": "RETURN 1 AS one", "tool": "analyze"})
        assert checked.structured_content is not None and checked.structured_content["allowed"] is True
        # `scope` in both of its forms passes the client's own check against the input schema.
        scopes: list[list[str] | dict[str, list[str]]] = [[], {"layers": []}]
        for scope in scopes:
            narrowed = await client.call_tool("analyze", {"cypher": "RETURN 1 AS one", "scope": scope})
            assert narrowed.structured_content is not None and narrowed.structured_content["rows"] == [[1]]
        analyzed = await client.call_tool("analyze", {"cypher": "RETURN 1 AS one"})
        assert analyzed.structured_content is not None and analyzed.structured_content["rows"] == [[1]]
        recalled = await client.call_tool(
            "recall", {"cypher": RECALL, "params": {"taskId": "no-such-task", "repository": "r"}}
        )
        assert recalled.structured_content is not None and recalled.structured_content["columns"] == ["task"]
        schema = await client.call_tool("schema", {})
        assert schema.structured_content is not None and "labels" in schema.structured_content
        # One error of each code a client can provoke on demand, each readable as text.
        codes = {}
        for arguments in (
            {"cypher": WRITE},  # rejected
            {"cypher": "RETURN 1", "parms": {}},  # invalid_input (an argument error)
            {"cypher": "MATCH (n) WHERE (n) RETURN n"},  # neo4j_refused (Neo4j's own refusal)
            {"cypher": SLOW},  # timeout
        ):
            failed = await client.call_tool("analyze", arguments, raise_on_error=False)
            assert failed.is_error and failed.structured_content is None
            error = _error_body(failed.content[0].text)
            codes[error["code"]] = error
        assert set(codes) == {"rejected", "invalid_input", "neo4j_refused", "timeout"}, codes
        assert codes["rejected"]["rule"] == "write.clause", codes["rejected"]
        assert "parms" in codes["invalid_input"]["message"] and "pydantic" not in codes["invalid_input"]["message"]
        # Both resources.
        assert {"policy://active", "schema://graph"} <= {str(r.uri) for r in await client.list_resources()}
        policy = await client.read_resource("policy://active")
        assert "analyze" in policy[0].text
        graph = await client.read_resource("schema://graph")
        assert "labels" in json.loads(graph[0].text)


def test_fastmcp_over_stdio(env: dict[str, str], tmp_path: Path) -> None:
    with (tmp_path / "server.log").open("a") as log:
        transport = StdioTransport(GATEWAY_CLI, ["serve"], env=env, cwd=str(REPO), log_file=log)
        anyio.run(_fastmcp_session, transport)


def test_fastmcp_over_http_with_a_token(http_server: tuple[str, str]) -> None:
    url, token = http_server
    anyio.run(_fastmcp_session, StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}"}))


# --- the SDK's own client, speaking the current revision -----------------------------------------------


async def _current_revision_session(url: str, token: str) -> None:
    # The SDK client probes `server/discover` first and adopts the stateless revision when the
    # server answers it; the older handshake is what the clients above speak.
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as http,
        McpClient(streamable_http_client(url, http_client=http), mode="auto") as client,
    ):
        assert client.session.protocol_version == LATEST_MODERN_VERSION
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
        analyzed = await client.call_tool("analyze", {"cypher": "RETURN 1 AS one"})
        assert not analyzed.is_error and analyzed.structured_content is not None
        assert analyzed.structured_content["rows"] == [[1]]
        rejected = await client.call_tool("analyze", {"cypher": WRITE})
        text = rejected.content[0]
        assert rejected.is_error and isinstance(text, TextContent)
        assert _error_body(text.text)["rule"] == "write.clause"


def test_the_sdk_client_speaking_the_current_revision_over_http(http_server: tuple[str, str]) -> None:
    url, token = http_server
    anyio.run(_current_revision_session, url, token)
