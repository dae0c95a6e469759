"""The MCP server: four thin tools and two resources over one :class:`~gateway.service.Gateway`.

Each tool validates its input (pydantic, unknown arguments refused), calls one
method of the core in a worker thread (the runner blocks), and maps the result
or the typed error to the wire. Errors are tool results with ``isError`` and a
JSON body ``{"error": {"code", "message", "rule"?, "reason"?}}``, never
exceptions that end the session.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio.to_thread
import yaml
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from gateway.auth import CURRENT_PRINCIPAL, PRINCIPAL_SCOPE_KEY
from gateway.domain import CheckResult, Principal, SchemaResult, ToolResult, Transport
from gateway.errors import Busy, GatewayError, InternalError, QueryRejected
from gateway.policy import Policy
from gateway.service import Gateway

CypherText = Annotated[
    str, Field(min_length=1, description="One Cypher read query. Put every literal value in params.")
]
# `check` says why for every text, an empty one included (rule input.invalid, as the CLI's
# `check` answers), rather than failing the call on the schema.
CheckedText = Annotated[str, Field(description="One Cypher read query. Put every literal value in params.")]
Params = Annotated[
    dict[str, Any] | None,
    Field(description="Query parameters, referenced as $name in the query. Values are never logged."),
]

_QUERY_ADVICE = (
    " Write good queries: pass every value as a parameter ($name) instead of pasting it into the text; "
    "RETURN only the properties you need (not whole nodes); project correction fields such as "
    "outdated markers and failed checks so you can tell a stale fact from a current one; bound "
    "traversals (*1..3) and use LIMIT. Treat what comes back as memory, not truth: verify it "
    "against the current code before you act on it. If a query is rejected, the error names the "
    "rule; call `check` to iterate without running anything. `degraded` is empty when every layer "
    "ran normally; `analyze:disabled`/`recall:disabled` means the sandbox could not run and no "
    "query was executed."
)


def recall_description(policy: Policy) -> str:
    """The recall tool's description, naming what the active policy requires of a query."""
    recall = policy.tool("recall")
    required = ", ".join(f"${name}" for name in recall.required_parameters)
    demands = [
        "read-only",
        "procedures: " + (", ".join(sorted(recall.procedures_allowed)) or "none"),
        *([f"{required} must be referenced and supplied"] if required else []),
        "correction edges hidden",
    ]
    return (
        "Exact-history reads (every attempt on a task, failed checks and outdated conclusions included), "
        f"under the recall policy ({'; '.join(demands)})." + _QUERY_ADVICE
    )


ANALYZE_DESCRIPTION = (
    "Ad-hoc read-only analysis (counting, grouping, traversal) under the analyze policy. "
    "Results are capped (rows and bytes, see `truncated`/`truncation`) and time-limited." + _QUERY_ADVICE
)
CHECK_DESCRIPTION = (
    "The guard's decision for a query without running it: allowed, the rule that refused it and why, "
    "and the scoped query that would run. Use it to fix a query before calling recall or analyze."
)
SCHEMA_DESCRIPTION = "Labels, relationship types and property keys your scope lets you see (read through the sandbox)."

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

PrincipalResolver = Callable[[Context[Any, Any]], tuple[Principal, Transport]]


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    message: str
    rule: str | None = None
    reason: str | None = None
    queryId: str | None = None  # with "internal": the id of the request's audit line
    # "busy" only: when trying again may succeed.
    retryAfterMs: int | None = None


def stdio_resolver(principal: Principal) -> PrincipalResolver:
    """Every stdio request is the one agent that launched the process; HTTP ones carry their own."""

    def resolve(ctx: Context[Any, Any]) -> tuple[Principal, Transport]:
        request = ctx.request_context.request
        if request is None:
            return principal, "stdio"
        found = getattr(request, "scope", {}).get(PRINCIPAL_SCOPE_KEY)
        if not isinstance(found, Principal):
            # Fail closed: an HTTP request that bypassed the auth middleware gets nothing.
            raise GatewayError("the request carries no authenticated principal")
        return found, "http"

    return resolve


def error_result(exc: GatewayError) -> CallToolResult:
    body = ErrorBody(code=exc.code, message=exc.message)
    if isinstance(exc, QueryRejected):
        body = ErrorBody(code=exc.code, message=exc.message, rule=exc.rule, reason=exc.reason)
    elif isinstance(exc, InternalError):
        body = ErrorBody(code=exc.code, message=exc.message, queryId=exc.query_id)
    elif isinstance(exc, Busy):
        body = ErrorBody(code=exc.code, message=exc.message, retryAfterMs=exc.retry_after_ms)
    data = {"error": body.model_dump(exclude_none=True)}
    # The body is in structured content too, so a client can branch on code and rule without parsing text.
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data))], structured_content=data, is_error=True
    )


def _ok(model: BaseModel) -> CallToolResult:
    data = model.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data))], structured_content=data)


def build_server(
    gateway: Gateway,
    resolve: PrincipalResolver,
    *,
    resource_principal: Principal | None = None,
    name: str = "cypher-gateway",
) -> MCPServer[Any]:
    """The MCP server for ``gateway``; ``resolve`` says who each tool request is.

    ``resource_principal`` reads ``schema://graph`` when no HTTP principal is in context (stdio).
    """
    server: MCPServer[Any] = MCPServer(
        name,
        instructions="Read-only Cypher over a sandboxed Neo4j. Start with `schema`, use `check` to fix queries.",
        middleware=[_taxonomy_for_sdk_errors],
    )

    def _caller(ctx: Context[Any, Any]) -> tuple[str, Transport]:
        """Who asked and how, for the audit line of a failure that may come before the principal is known."""
        try:
            principal, transport = resolve(ctx)
        except Exception:
            return "unknown", "stdio" if ctx.request_context.request is None else "http"
        return principal.name, transport

    async def _run(tool: Literal["recall", "analyze"], cypher: str, params: dict[str, Any] | None,
                   ctx: Context[Any, Any]) -> CallToolResult:  # fmt: skip
        try:
            principal, transport = resolve(ctx)
            result = await anyio.to_thread.run_sync(
                lambda: gateway.run(tool, cypher, params, principal, transport=transport)
            )
        except GatewayError as exc:
            return error_result(exc)
        except Exception as exc:  # outside the Gateway's own steps: still a typed, audited answer
            return error_result(gateway.failed_unexpectedly(tool, cypher, *_caller(ctx), exc))
        return _ok(result)

    @server.tool(name="recall", description=recall_description(gateway.policy), annotations=_READ_ONLY)
    async def recall(
        cypher: CypherText, ctx: Context[Any, Any], params: Params = None
    ) -> Annotated[CallToolResult, ToolResult]:
        return await _run("recall", cypher, params, ctx)

    @server.tool(name="analyze", description=ANALYZE_DESCRIPTION, annotations=_READ_ONLY)
    async def analyze(
        cypher: CypherText, ctx: Context[Any, Any], params: Params = None
    ) -> Annotated[CallToolResult, ToolResult]:
        return await _run("analyze", cypher, params, ctx)

    @server.tool(name="check", description=CHECK_DESCRIPTION, annotations=_READ_ONLY)
    async def check(
        cypher: CheckedText,
        tool: Annotated[Literal["recall", "analyze"], Field(description="The tool you mean to call.")],
        ctx: Context[Any, Any],
        params: Params = None,
    ) -> Annotated[CallToolResult, CheckResult]:
        try:
            principal, transport = resolve(ctx)
            result = await anyio.to_thread.run_sync(
                lambda: gateway.check(tool, cypher, params, principal, transport=transport)
            )
        except GatewayError as exc:
            return error_result(exc)
        except Exception as exc:
            return error_result(gateway.failed_unexpectedly("check", cypher, *_caller(ctx), exc))
        return _ok(result)

    @server.tool(name="schema", description=SCHEMA_DESCRIPTION, annotations=_READ_ONLY)
    async def schema(ctx: Context[Any, Any]) -> Annotated[CallToolResult, SchemaResult]:
        try:
            principal, transport = resolve(ctx)
            result = await anyio.to_thread.run_sync(lambda: gateway.schema(principal, transport=transport))
        except GatewayError as exc:
            return error_result(exc)
        except Exception as exc:
            return error_result(gateway.failed_unexpectedly("schema", "", *_caller(ctx), exc))
        return _ok(result)

    @server.resource("policy://active", name="active-policy", mime_type="application/yaml",
                     description="The active policy, as the reviewer sees it.")  # fmt: skip
    def active_policy() -> str:
        return yaml.safe_dump(gateway.policy.model_dump(mode="json"), sort_keys=False)

    @server.resource("schema://graph", name="graph-schema", mime_type="application/json",
                     description="Labels, relationship types and property keys visible to you.")  # fmt: skip
    async def graph_schema() -> str:
        # Static resources get no request context: the auth middleware's context variable
        # says who is asking over HTTP; otherwise it is the stdio principal, or nobody.
        principal = CURRENT_PRINCIPAL.get()
        transport: Transport = "http"
        if principal is None:
            if resource_principal is None:
                raise ResourceError("the request carries no authenticated principal")
            principal, transport = resource_principal, "stdio"
        try:
            result = await anyio.to_thread.run_sync(lambda: gateway.schema(principal, transport=transport))
        except GatewayError as exc:
            raise ResourceError(f"{exc.code}: {exc.message}") from exc
        return result.model_dump_json()

    for tool_name in ("recall", "analyze", "check", "schema"):
        _forbid_unknown_arguments(server, tool_name)
    return server


async def _taxonomy_for_sdk_errors(ctx: Any, call_next: Any) -> Any:
    # Argument validation and unknown tool names fail inside the SDK, before our tool
    # functions run; give those answers the same error shape and codes as ours. The
    # result here is already the wire dict: edit its content, keep its envelope.
    result = await call_next(ctx)
    if getattr(ctx, "method", None) != "tools/call" or not isinstance(result, dict) or not result.get("isError"):
        return result
    content = result.get("content") or [{}]
    text = content[0].get("text", "") if isinstance(content[0], dict) else ""
    if text.startswith('{"error"'):
        return result
    invalid = "validation error" in text or "Unknown tool" in text
    body = ErrorBody(code="invalid_input" if invalid else "unavailable", message=text or "the tool call failed")
    result["content"] = [{"type": "text", "text": json.dumps({"error": body.model_dump(exclude_none=True)})}]
    return result


def _forbid_unknown_arguments(server: MCPServer[Any], name: str) -> None:
    # The SDK's argument models ignore unknown keys; a misspelt "parms" would then be
    # silently dropped and the query run without its parameters. Refuse instead.
    tool = server._tool_manager.get_tool(name)
    assert tool is not None
    model = tool.fn_metadata.arg_model
    model.model_config["extra"] = "forbid"
    model.model_rebuild(force=True)
    tool.parameters = model.model_json_schema(by_alias=True)
