"""A reviewer's questions answered from the audit log alone, through the real ``serve``.

Who asked what under which scope and policy; what was refused and why; how many failed
logins from which address. Over HTTP with the tokens file, and over stdio. Every audit
line and every stderr line of the session is then searched for the tokens, the Neo4j
password and a parameter value: none may appear.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.audit import MAX_KEY_CHARS, AuditLog
from gateway.cli import main
from gateway.cli.audit import select
from gateway.connection import Neo4jConnection
from tests.support.env import server_env
from tests.support.paths import GATEWAY_CLI, REPO
from tests.support.server import HttpServer, SeededGraph

SECRET_VALUE = "a-parameter-value-never-logged-7f3a"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip  # noqa: E501
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
# Every line a server writes to stderr starts with its UTC time.
TIMED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 ")


def _http_calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        async with (
            create_mcp_http_client(headers={"authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client,
        ):
            return [await client.call_tool(tool, args) for tool, args in calls]

    return anyio.run(go)


def _policy_sha256(audit_path: Path) -> str:
    # server_env's policy file, written next to the audit log.
    return hashlib.sha256((audit_path.parent / "patient-default-policy.yaml").read_bytes()).hexdigest()


def _assert_never_logged(texts: list[str], secrets: list[str]) -> None:
    for secret in secrets:
        for text in texts:
            assert secret not in text


def _assert_timed(log: str) -> None:
    lines = [line for line in log.splitlines() if line.strip()]
    assert lines, "the server wrote nothing to stderr"
    untimed = [line for line in lines if not TIMED.match(line)]
    assert untimed == []
    assert "Terminating session" not in log


def test_http_session_answers_a_reviewer(
    http_server: HttpServer, seeded_graph: SeededGraph, neo4j_connection: Neo4jConnection,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    url, tokens, audit_path = http_server.url, http_server.tokens, http_server.audit_path
    in_scope, no_scope = tokens["agent-in-scope"], tokens["agent-no-scope"]
    start = len(AuditLog(audit_path).read())
    count = {"cypher": f"MATCH (n:{seeded_graph.label}) WHERE n.i > $floor RETURN count(n) AS c",
             "params": {"floor": -1, "note": SECRET_VALUE}}  # fmt: skip
    answers = _http_calls(url, in_scope, [("analyze", count), ("schema", {}),
                                          ("analyze", {"cypher": f"CREATE (:{seeded_graph.label})"})])  # fmt: skip
    answers += _http_calls(url, no_scope, [("analyze", count)])
    assert [a.is_error for a in answers] == [False, False, True, False]

    # Refused before any tool: no token, two unknown ones, a foreign Host, a foreign Origin, a large body.
    authorized = {**HEADERS, "authorization": f"Bearer {in_scope}"}
    statuses = [
        httpx.post(url, json=INIT, headers=HEADERS).status_code,
        httpx.post(url, json=INIT, headers={**HEADERS, "authorization": f"Bearer {in_scope[::-1]}"}).status_code,
        httpx.post(url, json=INIT, headers={**HEADERS, "authorization": "Bearer guessed-token-0000"}).status_code,
        httpx.post(url, json=INIT, headers={**authorized, "host": "evil.example"}).status_code,
        httpx.post(url, json=INIT, headers={**authorized, "origin": "http://evil.example"}).status_code,
        httpx.post(url, json={**INIT, "pad": "x" * 70_000}, headers=authorized).status_code,
    ]
    assert statuses == [401, 401, 401, 421, 403, 413]

    lines = AuditLog(audit_path).read()[start:]
    calls = [line for line in lines if line["tool"] != "http"]
    refused = [line for line in lines if line["tool"] == "http"]

    # Who asked what, under which scope and policy, from where.
    assert [(c["principal"], c["tool"], c["decision"], c["scope"]) for c in calls] == [
        ("agent-in-scope", "analyze", "answered", [seeded_graph.layer]),
        ("agent-in-scope", "schema", "answered", [seeded_graph.layer]),
        ("agent-in-scope", "analyze", "rejected", [seeded_graph.layer]),
        ("agent-no-scope", "analyze", "answered", []),
    ]
    assert [c["attributes"] for c in calls] == [{}, {}, {}, {"repositories": ["acme/api"]}]
    sha = _policy_sha256(audit_path)
    for line in lines:
        assert (line["policy"], line["policy_sha256"]) == ("default-all-properties", sha)
        assert (line["transport"], line["client"]) == ("http", "127.0.0.1")
        assert line["subject"] is None and line["issuer"] is None  # a tokens-file principal, not a JWT
    assert calls[0]["param_keys"] == ["floor", "note"] and calls[2]["rule"] == "write.clause"
    # schema: one line with what it counted, none of its sub-queries as analyze lines.
    assert calls[1]["counted"]["labels"] >= 1 and calls[1]["counted"]["propertyKeys"] >= 1
    assert not any("labels(n)" in str(line.get("query")) for line in lines)

    # What was refused and why; the principal where authentication had passed.
    assert [(r["status"], r["decision"], r["principal"], r["reason"]) for r in refused] == [
        (401, "refused", None, "no bearer token"),
        (401, "refused", None, "unknown token"),
        (401, "refused", None, "unknown token"),
        (421, "refused", "agent-in-scope", "Invalid Host header"),
        (403, "refused", "agent-in-scope", "Invalid Origin header"),
        (413, "refused", "agent-in-scope", "request body over 64000 bytes"),
    ]
    assert all(r["time"] and r["scope"] is not None for r in refused if r["principal"])

    # How many failed logins from which address, with the CLI a reviewer runs.
    assert main(["audit", "summary", "--json", "--path", str(audit_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    failed_logins = [r for r in select(AuditLog(audit_path).read(), decision="refused") if r["status"] == 401]
    assert len(failed_logins) >= 3 and {r["client"] for r in failed_logins} == {"127.0.0.1"}
    assert summary["refused_by_client"]["127.0.0.1"] >= 6
    assert summary["by_tool"]["schema"] >= 1
    assert main(["audit", "summary", "--by", "principal", "--json", "--path", str(audit_path)]) == 0
    by_principal = json.loads(capsys.readouterr().out)
    assert by_principal["agent-in-scope"]["rejected"] >= 1 and by_principal["agent-no-scope"]["answered"] >= 1

    # Never logged: tokens, the Neo4j password, parameter values; stderr lines carry their time.
    log = http_server.log_path.read_text()
    _assert_never_logged(
        [audit_path.read_text(), log], [*tokens.values(), neo4j_connection.password.get_secret_value(), SECRET_VALUE]
    )
    _assert_timed(log)


def test_stdio_session_answers_a_reviewer(
    neo4j_connection: Neo4jConnection, sandbox_image: str, seeded_graph: SeededGraph, tmp_path: Path
) -> None:
    audit_path = tmp_path / "audit.jsonl"
    env = server_env(neo4j_connection, sandbox_image, audit_path, GATEWAY_STDIO_SCOPE=seeded_graph.layer,
                     GATEWAY_STDIO_PRINCIPAL="stdio-agent",
                     GATEWAY_STDIO_ATTRIBUTES="repositories=acme/api,acme/web;tenants=")  # fmt: skip
    stderr_path = tmp_path / "stderr.log"
    huge_key = "k" * 1_000_000

    async def session() -> list[Any]:
        params = StdioServerParameters(command=GATEWAY_CLI, args=["serve"], env=env, cwd=str(REPO))
        with stderr_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
                return [
                    await client.call_tool("schema", {}),
                    await client.call_tool("analyze", {"cypher": "RETURN $x AS x", "params": {"x": SECRET_VALUE}}),
                    # stdio has no body limit: the policy bounds the parameters.
                    await client.call_tool("analyze", {"cypher": "RETURN 1 AS x", "params": {huge_key: 1}}),
                ]

    schema, echoed, huge = anyio.run(session)
    assert not schema.is_error and not echoed.is_error
    assert json.loads(huge.content[0].text)["error"]["rule"] == "input.params_too_large"
    lines = AuditLog(audit_path).read()
    assert [(line["tool"], line["decision"], line["rule"]) for line in lines] == [
        ("schema", "answered", None), ("analyze", "answered", None),
        ("analyze", "rejected", "input.params_too_large"),
    ]  # fmt: skip
    sha = _policy_sha256(audit_path)
    for line in lines:
        assert (line["principal"], line["scope"], line["transport"], line["client"]) == (
            "stdio-agent", [seeded_graph.layer], "stdio", None)  # fmt: skip
        assert line["attributes"] == {"repositories": ["acme/api", "acme/web"], "tenants": []}
        assert (line["policy"], line["policy_sha256"]) == ("default-all-properties", sha)
    assert lines[2]["param_count"] == 1 and len(lines[2]["param_keys"][0]) == MAX_KEY_CHARS + 1
    assert audit_path.stat().st_size < 20_000  # a million-character key did not land in the log
    log = stderr_path.read_text()
    _assert_never_logged([audit_path.read_text(), log], [neo4j_connection.password.get_secret_value(), SECRET_VALUE])
    _assert_timed(log)
