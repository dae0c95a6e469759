"""End to end: the SDK's MCP client -> ``cypher-gateway serve`` (a real child process) -> the real
sandbox containers -> the real Neo4j, over stdio and over streamable HTTP.

Each stdio test starts one server process and makes several calls in one session, to keep
container churn low on a small machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import TextResourceContents

from gateway.audit import AuditLog
from gateway.connection import Neo4jConnection
from gateway.policy import load_policy
from tests.support.env import server_env
from tests.support.paths import GATEWAY_CLI, REPO
from tests.support.server import HttpServer, SeededGraph

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x

LIMITS = load_policy().tool("analyze").limits


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, f"expected a tool error, got {result.structured_content}"
    body: dict[str, Any] = json.loads(result.content[0].text)["error"]
    return body


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text if result.content else result
    data: dict[str, Any] = result.structured_content
    return data


def _stdio(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=GATEWAY_CLI, args=["serve"], env=env, cwd=str(REPO))


def _recall_args(graph: SeededGraph, cypher: str) -> dict[str, Any]:
    return {"cypher": cypher, "params": {"repository": graph.repository, "taskId": graph.task_id}}


def test_stdio_recall_rejection_truncation_and_audit(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph, tmp_path: Path
) -> None:
    audit_path = tmp_path / "audit.jsonl"
    env = server_env(neo4j_connection, sandbox_image, audit_path, GATEWAY_STDIO_SCOPE=seeded_graph.layer,
                     GATEWAY_STDIO_PRINCIPAL="stdio-agent")  # fmt: skip
    label = seeded_graph.label
    results: dict[str, Any] = {}

    async def session() -> None:
        async with Client(_stdio(env), read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            results["tools"] = tools
            results["recall"] = await client.call_tool("recall", _recall_args(
                seeded_graph,
                f"MATCH (n:{label}) WHERE n.repository = $repository AND n.taskId = $taskId AND n.kind = 'fact' "
                "AND n.i <= 5 RETURN n.i AS i, n.text AS text ORDER BY i",
            ))  # fmt: skip
            results["write"] = await client.call_tool("analyze", {"cypher": f"CREATE (:{label} {{pwned: true}})"})
            results["rows"] = await client.call_tool(
                "analyze", {"cypher": f"MATCH (n:{label}) WHERE n.kind = 'fact' RETURN n.i AS i ORDER BY i"}
            )
            results["bytes"] = await client.call_tool(
                "analyze", {"cypher": f"MATCH (n:{label}) WHERE n.kind = 'blob' RETURN n.i AS i, n.blob AS blob"}
            )
            # Cheap to write, slow to run: Neo4j terminates it at the policy timeout.
            results["timeout"] = await client.call_tool("analyze", {
                "cypher": "UNWIND range(1, 1000000) AS x UNWIND range(1, 1000000) AS y "
                "WITH x WHERE x % 7 = 99 RETURN count(x) AS c"
            })  # fmt: skip
            results["check"] = await client.call_tool(
                "check", {"cypher": "MATCH (n) DETACH DELETE n", "tool": "analyze"}
            )
            results["policy"] = await client.read_resource("policy://active")

    anyio.run(session)

    tools = results["tools"]
    assert set(tools) >= {"recall", "analyze", "check", "schema"}
    for name in ("recall", "analyze", "check", "schema"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].output_schema is not None
        assert tools[name].input_schema.get("additionalProperties") is False

    recall = _ok(results["recall"])
    assert recall["columns"] == ["i", "text"]
    assert recall["rows"] == [[i, f"fact {i}"] for i in range(1, 6)]
    assert recall["degraded"] == [] and recall["truncated"] is False and recall["rowCount"] == 5

    write = _error(results["write"])
    assert write["code"] == "rejected" and write["rule"] == "write.clause"

    rows = _ok(results["rows"])
    assert rows["truncated"] is True and rows["truncation"] == "rows"
    assert rows["rowCount"] == LIMITS.max_rows == len(rows["rows"]) and seeded_graph.many > LIMITS.max_rows

    big = _ok(results["bytes"])
    assert big["truncated"] is True and big["truncation"] == "bytes"
    assert big["bytes"] <= LIMITS.max_bytes
    assert seeded_graph.blobs * seeded_graph.blob_chars > LIMITS.max_bytes > 0
    assert 0 < big["rowCount"] < seeded_graph.blobs

    assert _error(results["timeout"])["code"] == "timeout"

    check = _ok(results["check"])
    assert check["allowed"] is False and check["rule"] == "write.clause"
    assert "name: default" in results["policy"].contents[0].text

    lines = AuditLog(audit_path).read()
    by_decision = [(line["tool"], line["decision"], line["rule"]) for line in lines]
    assert by_decision == [
        ("recall", "answered", None),
        ("analyze", "rejected", "write.clause"),
        ("analyze", "answered", None),
        ("analyze", "answered", None),
        ("analyze", "error", None),
        ("check", "rejected", "write.clause"),
    ]
    assert lines[4]["error_code"] == "timeout"
    assert lines[4]["duration_ms"] >= LIMITS.timeout_seconds * 1000 * 0.9
    assert all(line["principal"] == "stdio-agent" and line["transport"] == "stdio" for line in lines)
    assert lines[2]["truncation"] == "rows" and lines[3]["truncation"] == "bytes"
    raw = audit_path.read_text()
    assert (
        neo4j_connection.password.get_secret_value() not in raw and seeded_graph.task_id not in raw
    )  # values redacted


def test_stdio_out_of_scope_principal_sees_nothing(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph, tmp_path: Path
) -> None:
    env = server_env(neo4j_connection, sandbox_image, tmp_path / "audit.jsonl", GATEWAY_STDIO_SCOPE="some-other-layer")

    async def session() -> Any:
        async with Client(_stdio(env), read_timeout_seconds=120) as client:
            return await client.call_tool("analyze", {"cypher": f"MATCH (n:{seeded_graph.label}) RETURN count(n) AS c"})

    result = _ok(anyio.run(session))
    assert result["rows"] == [[0]]


def test_stdio_analyze_disabled_when_the_sandbox_cannot_run(neo4j_connection: Neo4jConnection, tmp_path: Path) -> None:
    audit_path = tmp_path / "audit.jsonl"
    # An image that does not exist: the runner cannot start a sandbox.
    env = server_env(neo4j_connection, "cypher-gateway/sandbox:does-not-exist", audit_path)
    errlog = (tmp_path / "stderr.log").open("w")

    async def session() -> tuple[Any, Any]:
        params = _stdio(env)
        from mcp.client.stdio import stdio_client

        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
            analyze = await client.call_tool("analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})
            recall = await client.call_tool("recall", {
                "cypher": "MATCH (n) WHERE n.repository = $repository AND n.taskId = $taskId RETURN n.i AS i",
                "params": {"repository": "r", "taskId": "t"},
            })  # fmt: skip
            return analyze, recall

    analyze, recall = anyio.run(session)
    errlog.close()
    assert _ok(analyze)["degraded"] == ["analyze:disabled"] and _ok(analyze)["rows"] == []
    assert _ok(recall)["degraded"] == ["recall:disabled"] and _ok(recall)["rows"] == []
    stderr = (tmp_path / "stderr.log").read_text()
    assert "does-not-exist" in stderr and "degraded" in stderr  # says clearly what is missing
    assert [line["decision"] for line in AuditLog(audit_path).read()] == ["degraded", "degraded"]


# --- HTTP ------------------------------------------------------------------------------------------


def _http_call(url: str, token: str | None, tool: str, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client,
        ):
            return await client.call_tool(tool, args)

    return anyio.run(go)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip  # noqa: E501
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def test_http_without_or_with_wrong_token_is_refused(http_server: HttpServer) -> None:
    before = len(AuditLog(http_server.audit_path).read())
    assert httpx.post(http_server.url, json=INIT, headers=HEADERS).status_code == 401
    wrong = {**HEADERS, "authorization": "Bearer " + http_server.tokens["agent-in-scope"][::-1]}
    assert httpx.post(http_server.url, json=INIT, headers=wrong).status_code == 401
    with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 401 in an ExceptionGroup
        _http_call(http_server.url, "not-a-token", "analyze", {"cypher": "MATCH (n) RETURN count(n) AS c"})
    # Refused requests never reach a tool: each is one "refused" line, none a tool's.
    new = AuditLog(http_server.audit_path).read()[before:]
    assert new and {(line["tool"], line["decision"], line["status"]) for line in new} == {("http", "refused", 401)}


def test_http_right_token_is_served_with_its_scope(http_server: HttpServer, seeded_graph: SeededGraph) -> None:
    label = seeded_graph.label
    query = {"cypher": f"MATCH (n:{label}) WHERE n.kind = 'fact' RETURN count(n) AS c"}
    in_scope = _ok(_http_call(http_server.url, http_server.tokens["agent-in-scope"], "analyze", query))
    assert in_scope["rows"] == [[seeded_graph.many]] and in_scope["degraded"] == []
    no_scope = _ok(_http_call(http_server.url, http_server.tokens["agent-no-scope"], "analyze", query))
    assert no_scope["rows"] == [[0]]
    rejected = _error(_http_call(http_server.url, http_server.tokens["agent-in-scope"], "analyze",
                                 {"cypher": "LOAD CSV FROM 'http://169.254.169.254/' AS l RETURN l"}))  # fmt: skip
    assert rejected["code"] == "rejected" and rejected["rule"] == "load_csv"
    lines = AuditLog(http_server.audit_path).read()[-3:]
    assert [(ln["principal"], ln["transport"], ln["decision"]) for ln in lines] == [
        ("agent-in-scope", "http", "answered"), ("agent-no-scope", "http", "answered"),
        ("agent-in-scope", "http", "rejected"),
    ]  # fmt: skip
    for token in http_server.tokens.values():
        assert token not in http_server.audit_path.read_text()
        assert token not in http_server.log_path.read_text()


def test_http_schema_resource_is_scoped_to_the_token(http_server: HttpServer, seeded_graph: SeededGraph) -> None:
    async def read(token: str) -> dict[str, Any]:
        async with (
            create_mcp_http_client(headers={"authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(http_server.url, http_client=http), read_timeout_seconds=120) as client,
        ):
            (contents,) = (await client.read_resource("schema://graph")).contents
            assert isinstance(contents, TextResourceContents)
            data: dict[str, Any] = json.loads(contents.text)
            return data

    in_scope = anyio.run(read, http_server.tokens["agent-in-scope"])
    no_scope = anyio.run(read, http_server.tokens["agent-no-scope"])
    assert seeded_graph.label in in_scope["labels"] and "blob" in in_scope["propertyKeys"]
    assert seeded_graph.label not in no_scope["labels"]


def test_http_oversized_request_is_refused(http_server: HttpServer) -> None:
    headers = {**HEADERS, "authorization": "Bearer " + http_server.tokens["agent-in-scope"]}
    response = httpx.post(http_server.url, json={**INIT, "pad": "x" * 70_000}, headers=headers)
    assert response.status_code == 413
