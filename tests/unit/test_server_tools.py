"""The MCP surface in-process (the SDK's in-memory client): schemas, annotations, error shapes.

The runner is a stand-in that answers a fixed SandboxResult, so these tests are about the
mapping from the core to the wire; the real path is tests/test_server_e2e.py.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client
from mcp.types import TextResourceContents

import gateway
from gateway.audit import AuditLog
from gateway.domain import Principal
from gateway.errors import Busy
from gateway.policy import load_policy
from gateway.server import build_server, stdio_resolver
from gateway.service import Gateway
from sandbox.wire import SandboxError, SandboxJob, SandboxResult
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

P = Principal(name="t", scope=frozenset({"l1"}))
REPO = Path(__file__).resolve().parents[2]


class Answering(RunnerStub):
    def __init__(self, error: SandboxError | None = None) -> None:
        super().__init__()
        self.error = error

    def answer(self, job: SandboxJob) -> SandboxResult:
        if self.error:
            return SandboxResult(query_id=job.query_id, ok=False, error=self.error)
        return SandboxResult(query_id=job.query_id, ok=True, columns=["c"], rows=[[7]], row_count=1, bytes=3)


def _calls(gateway: Gateway, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    server = build_server(gateway, stdio_resolver(P), resource_principal=P)

    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(go)


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error
    # Text only: structured content would be checked against the success schema by clients.
    assert result.structured_content is None
    body: dict[str, Any] = json.loads(result.content[0].text)["error"]
    return body


COUNT = {"cypher": "MATCH (n) RETURN count(n) AS c"}


def test_tools_are_read_only_strict_and_structured() -> None:
    server = build_server(Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), None), stdio_resolver(P))

    async def go() -> Any:
        async with Client(server) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == {"recall", "analyze", "check", "schema"}
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is not None
    assert {"degraded", "truncated", "truncation", "columns", "rows", "rowCount", "bytes", "queryId"} <= set(
        tools["analyze"].output_schema["properties"]
    )
    assert "parameter" in tools["recall"].description and "verify" in tools["analyze"].description
    assert tools["check"].input_schema["required"] == ["cypher", "tool"]
    for tool in tools.values():
        assert tool.title and tool.title != tool.name
        assert tool.annotations is not None
        assert tool.annotations.idempotent_hint is True and tool.annotations.open_world_hint is False


def test_server_says_its_version_and_the_workflow() -> None:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    server = build_server(Gateway(policy, None), stdio_resolver(P))

    async def go() -> Any:
        async with Client(server) as client:
            return client.session.server_info, client.session.instructions, client.session.server_capabilities

    info, instructions, capabilities = anyio.run(go)
    assert info.name == "cypher-gateway" and info.version == gateway.__version__ == version("cypher-gateway")
    assert instructions is not None
    for step in ("`schema`", "`check`", "`recall`", "`analyze`", "degradedReason", '{"error"'):
        assert step in instructions
    assert instructions.index("`schema`") < instructions.index("`check`") < instructions.index("`analyze`")
    limits = policy.tool("analyze").limits
    assert f"{limits.max_rows} rows" in instructions and f"{limits.max_bytes:,} bytes" in instructions
    assert capabilities.logging is not None  # degraded answers are also sent as log notifications


def test_success_and_each_error_code_on_the_wire() -> None:
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), Answering())
    ok, write, typo, unknown_tool, empty = _calls(
        gateway, ("analyze", COUNT), ("analyze", {"cypher": "MERGE (n:X)"}),
        ("analyze", {**COUNT, "parms": {"a": 1}}), ("drop_everything", COUNT), ("analyze", {"cypher": ""}),
    )  # fmt: skip
    assert not ok.is_error and ok.structured_content["rows"] == [[7]] and ok.structured_content["degraded"] == []
    assert _error(write)["code"] == "rejected" and _error(write)["rule"] == "write.clause"
    assert _error(typo)["code"] == "invalid_input" and "parms" in _error(typo)["message"]
    assert _error(unknown_tool)["code"] == "invalid_input"
    assert _error(empty)["code"] == "invalid_input"


def test_argument_errors_name_the_argument_not_pydantic() -> None:
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), Answering())
    typo, wrong_type, bad_enum, missing = _calls(
        gateway, ("analyze", {**COUNT, "parms": {"secret-value": 1}}), ("analyze", {**COUNT, "params": "secret-value"}),
        ("check", {**COUNT, "tool": "delete"}), ("recall", {"params": {}}),
    )  # fmt: skip
    assert _error(typo)["message"] == "invalid arguments for analyze: parms: Extra inputs are not permitted"
    assert _error(wrong_type)["message"] == "invalid arguments for analyze: params: Input should be a valid dictionary"
    assert _error(bad_enum)["message"] == "invalid arguments for check: tool: Input should be 'recall' or 'analyze'"
    assert _error(missing)["message"] == "invalid arguments for recall: cypher: Field required"
    for result in (typo, wrong_type, bad_enum, missing):
        text = result.content[0].text
        assert "pydantic" not in text and "http" not in text and "secret-value" not in text


@pytest.mark.parametrize(
    ("sandbox_code", "wire_code"),
    [("timeout", "timeout"), ("neo4j_refused", "neo4j_refused"), ("unavailable", "unavailable")],
)
def test_sandbox_failures_are_tool_errors_not_crashes(sandbox_code: Any, wire_code: str) -> None:
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), Answering(SandboxError(code=sandbox_code, message="m")))
    failed, after = _calls(gateway, ("analyze", COUNT), ("check", {**COUNT, "tool": "analyze"}))
    assert _error(failed)["code"] == wire_code
    assert not after.is_error  # the session survived


class AtCapacity(RunnerStub):
    def answer(self, job: SandboxJob) -> SandboxResult:
        raise Busy("the gateway is at capacity (every sandbox is in use; waited 500 ms): nothing ran", 850)


def test_busy_is_a_tool_error_with_a_retry_hint() -> None:
    busy, after = _calls(
        Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), AtCapacity()),
        ("analyze", COUNT),
        ("check", {**COUNT, "tool": "analyze"}),
    )
    assert _error(busy) == {
        "code": "busy",
        "message": "the gateway is at capacity (every sandbox is in use; waited 500 ms): nothing ran",
        "retryAfterMs": 850,
    }
    assert busy.structured_content is None  # errors are text only: every client reads them
    assert not after.is_error


def test_policy_resource_is_the_active_policy() -> None:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    server = build_server(Gateway(policy, None), stdio_resolver(P), resource_principal=P)

    async def go() -> Any:
        async with Client(server) as client:
            (contents,) = (await client.read_resource("policy://active")).contents
            assert isinstance(contents, TextResourceContents)
            return contents.text

    shown = yaml.safe_load(anyio.run(go))
    assert shown["name"] == policy.name
    assert shown["tools"]["analyze"]["limits"]["max_rows"] == policy.tool("analyze").limits.max_rows


class Broken(RunnerStub):
    """A runner with a bug: anything unexpected on the request path, not a sandbox answer."""

    def answer(self, job: SandboxJob) -> SandboxResult:
        raise RecursionError("maximum recursion depth exceeded")


def test_an_unexpected_exception_is_a_typed_internal_error_with_its_audit_line(tmp_path: Any) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), Broken(), audit=audit)
    failed, after = _calls(gateway, ("analyze", COUNT), ("check", {**COUNT, "tool": "analyze"}))
    body = _error(failed)
    assert body["code"] == "internal" and body["queryId"] in body["message"]
    assert "Recursion" not in body["message"]  # the traceback is the operator's, not the caller's
    assert not after.is_error  # the session survived
    (line,) = [entry for entry in audit.read() if entry["tool"] == "analyze"]
    assert line["query_id"] == body["queryId"]
    assert (line["decision"], line["error_code"]) == ("error", "internal")


def test_an_exception_before_the_gateway_is_reached_is_typed_and_audited(tmp_path: Any) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), Answering(), audit=audit)

    def resolve(ctx: Any) -> Any:
        raise KeyError("no principal table")

    server = build_server(gateway, resolve)

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool("analyze", COUNT)

    body = _error(anyio.run(go))
    assert body["code"] == "internal"
    (line,) = audit.read()
    assert (line["query_id"], line["error_code"], line["principal"]) == (body["queryId"], "internal", "unknown")


def test_a_disabled_tool_says_why_in_the_answer_and_in_a_log_notification() -> None:
    reason = "sandbox image cypher-gateway/sandbox:x is not present (build it: cypher-gateway images build sandbox)"
    server = build_server(
        Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), None, disabled_reason=reason),
        stdio_resolver(P),
        resource_principal=P,
    )
    logged: list[Any] = []

    async def on_log(params: Any) -> None:
        logged.append(params)

    async def go() -> tuple[Any, Any]:
        async with Client(server, logging_callback=on_log, log_level="warning") as client:
            return await client.call_tool("analyze", COUNT), await client.call_tool("schema", {})

    analyze, schema = anyio.run(go)
    assert not analyze.is_error
    assert analyze.structured_content["degraded"] == ["analyze:disabled"]
    assert analyze.structured_content["degradedReason"] == reason and analyze.structured_content["rows"] == []
    assert schema.structured_content["degradedReason"] == reason
    assert [entry.level for entry in logged] == ["warning", "warning"]
    assert logged[0].data == {"degraded": ["analyze:disabled"], "reason": reason}


def test_a_request_scope_narrows_over_the_wire_and_a_wider_one_is_a_rule() -> None:
    runner = Answering()
    narrowed, empty, wider = _calls(
        Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), runner),
        ("analyze", {"cypher": "MATCH (n:Fact) RETURN n.text AS t", "scope": ["l1"]}),
        ("analyze", {"cypher": "MATCH (n:Fact) RETURN n.text AS t", "scope": []}),
        ("check", {"cypher": "RETURN 1 AS x", "tool": "analyze", "scope": ["l2"]}),
    )
    assert not narrowed.is_error and not empty.is_error
    key = load_policy(ALL_PROPERTIES_POLICY_PATH).scope.scope_parameter
    assert [job.params[key] for job in runner.jobs] == [["l1"], []]
    assert wider.structured_content["allowed"] is False and wider.structured_content["rule"] == "scope.wider"


def test_a_request_scope_per_attribute_narrows_over_the_wire_and_an_unappliable_one_is_a_rule() -> None:
    runner = Answering()
    mentis = load_policy(REPO / "policies" / "mentis.yaml")
    dev = Principal(name="dev", attributes={"repositories": frozenset({"acme/payments", "acme/storefront"})})
    server = build_server(Gateway(mentis, runner), stdio_resolver(dev), resource_principal=dev)
    query = "MATCH (r:Repository) RETURN r.name AS n"

    async def go() -> list[Any]:
        async with Client(server) as client:
            return [
                await client.call_tool("analyze", {"cypher": query, "scope": {"repositories": ["acme/payments"]}}),
                await client.call_tool("analyze", {"cypher": query, "scope": []}),
                await client.call_tool("analyze", {"cypher": query, "scope": {"layers": ["x"]}}),
                await client.call_tool("analyze", {"cypher": query, "scope": {"repositories": "acme/payments"}}),
            ]

    narrowed, listed, unread, misshapen = anyio.run(go)
    assert not narrowed.is_error
    assert [job.params["__gw_attr_repositories"] for job in runner.jobs] == [["acme/payments"]]
    assert _error(listed)["rule"] == _error(unread)["rule"] == "scope.unappliable"
    assert _error(misshapen)["code"] == "invalid_input"


def test_the_scope_argument_schema_describes_the_list_and_the_mapping_form() -> None:
    server = build_server(
        Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), Answering()), stdio_resolver(P), resource_principal=P
    )

    async def go() -> Any:
        async with Client(server) as client:
            return await client.list_tools()

    tools = {tool.name: tool for tool in anyio.run(go).tools}
    for name in ("recall", "analyze", "check"):
        scope = tools[name].input_schema["properties"]["scope"]
        forms = scope["anyOf"]
        assert {"type": "array", "items": {"type": "string"}} in forms
        assert {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}} in forms
        assert "scope.unappliable" in scope["description"] and "repositories" in scope["description"]
