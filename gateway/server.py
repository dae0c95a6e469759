"""The MCP server: four thin tools and two resources over one :class:`~gateway.service.Gateway`.

Each tool validates its input (pydantic, unknown arguments refused), calls one
method of the core in a worker thread (the runner blocks), and maps the result
or the typed error to the wire (``gateway.answer`` says what a result looks like
as sent). Errors are tool results with ``isError`` whose text is the JSON body
``{"error": {"code", "message", "rule"?, "reason"?}}`` and which carry no
structured content (docs/decisions/0012), never exceptions that end the
session. A cancelled ``recall``/``analyze`` kills its sandbox.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
import warnings
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
import yaml
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import CallToolResult, EmptyResult, SetLevelRequestParams, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway import __version__, answer
from gateway.auth import CURRENT_PRINCIPAL, PRINCIPAL_SCOPE_KEY, TOOLS_SCOPE_KEY
from gateway.domain import CheckResult, Principal, SchemaResult, ToolResult, Transport
from gateway.errors import Busy, GatewayError, InternalError, InvalidInput, QueryRejected
from gateway.oauth import InsufficientScope
from gateway.policy import Policy
from gateway.service import Gateway

log = logging.getLogger(__name__)
# The logger name on the log notifications the server sends.
_LOGGER = "cypher-gateway"

CypherText = Annotated[
    str, Field(min_length=1, description="One Cypher read query. Put every literal value in params.")
]
# `check` says why for every text, an empty one included (rule input.invalid, as the CLI's
# `check` answers), rather than failing the call on the schema.
CheckedText = Annotated[str, Field(description="One Cypher read query. Put every literal value in params.")]
Params = Annotated[
    dict[str, Any] | None,
    Field(
        description="Query parameters, referenced as $name in the query. Values are not logged, except the "
        "values of the parameters a recall pin binds (the audit names what was read)."
    ),
]

RequestedScope = Annotated[
    list[str] | dict[str, list[str]] | None,
    Field(
        description="Optional: narrow what you see for this request. Either a list of your layers "
        '(["project-a"]; [] = global elements only), or one list per attribute the policy reads '
        '({"repositories": ["acme/payments"]}; `policy://active` names them). Omit it for your whole scope. '
        "A value outside your own is refused (rule scope.wider); an attribute the policy does not read, "
        "or a list under a policy that reads no layers, is refused (rule scope.unappliable)."
    ),
]

# The MCP tools this server lists (policy.TOOL_NAMES: the tools that run queries under a policy).
MCP_TOOLS = ("recall", "analyze", "check", "schema")

_QUERY_ADVICE = (
    " Write good queries: pass every value as a parameter ($name) instead of pasting it into the text; "
    "RETURN only the properties you need (not whole nodes); project correction fields such as "
    "outdated markers and failed checks so you can tell a stale fact from a current one; bound "
    "traversals (*1..3) and use LIMIT. Treat what comes back as memory, not truth: verify it "
    "against the current code before you act on it. If a query is rejected, the error names the "
    "rule; call `check` to iterate without running anything. `degraded` is empty when every layer "
    "ran normally; `analyze:disabled`/`recall:disabled` means the sandbox could not run and no "
    "query was executed (`degradedReason` says why); `identity:claim-missing` means your token lacks "
    "a claim the gateway maps, so you see less than intended: relay `degradedReason` to the operator."
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

TITLES = {
    "recall": "Recall exact history (read-only Cypher)",
    "analyze": "Analyze the graph (read-only Cypher)",
    "check": "Check a query (runs nothing)",
    "schema": "Visible schema",
}

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def instructions(policy: Policy) -> str:
    """What an agent reads once, at connection: the workflow, the limits in force, the error shape."""
    recall = policy.tool("recall")
    required = " and ".join(f"${name}" for name in recall.required_parameters)
    limits = "; ".join(
        f"{tool}: {lim.max_rows} rows, {lim.max_bytes:,} bytes in all, {lim.timeout_seconds:g} s"
        for tool, lim in ((tool, policy.tool(tool).limits) for tool in ("recall", "analyze"))
    )
    return (
        "cypher-gateway runs read-only Cypher you write against a Neo4j memory graph, each query in a "
        f"sandbox under the policy '{policy.name}'. You see only the elements of your scope. Workflow: "
        "1. call `schema` for the labels, relationship types and property keys you can see; "
        "2. write one read query and pass every value as a $parameter; "
        "3. call `check` to learn whether it is allowed (the rule and reason when not) and the scoped query "
        "that would run; it runs nothing; "
        "4. call `recall` for the exact history of one task"
        + (f" (reference and supply {required})" if required else "")
        + ", or `analyze` for counting, grouping and traversal. "
        f"Limits ({limits}): `truncated` and `truncation` (rows or bytes) say when a limit cut the answer. "
        "`degraded` lists what did not run normally: `<tool>:disabled` means nothing ran, and "
        "`degradedReason` says why and how the operator fixes it. A failed call is an error result whose "
        'text is JSON {"error": {"code", "message", "rule", "reason"}}: `rejected` names the rule '
        "(change the query, iterate with `check`); `timeout` means make the query do less (bound "
        "*1..3, LIMIT); `invalid_input` means fix the arguments."
    )


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


def _granted_tools(ctx: Context[Any, Any], tool: str) -> frozenset[str]:
    """The gated tools this request may call: an OAuth token's scopes grant them; any other principal has all."""
    request = ctx.request_context.request
    granted = getattr(request, "scope", {}).get(TOOLS_SCOPE_KEY) if request is not None else None
    return frozenset({tool}) if granted is None else frozenset(granted)


def error_result(exc: GatewayError) -> CallToolResult:
    """A tool error every client can read: ``isError`` and the JSON body as text, no structured content.

    Structured content would have to match the tool's output schema (the success shape): several
    clients validate an error's structured content against it and then show only the validation
    failure, never the rule. Text is the one shape all of them pass through (decisions/0012).
    """
    body = ErrorBody(code=exc.code, message=exc.message)
    if isinstance(exc, QueryRejected):
        body = ErrorBody(code=exc.code, message=exc.message, rule=exc.rule, reason=exc.reason)
    elif isinstance(exc, InternalError):
        body = ErrorBody(code=exc.code, message=exc.message, queryId=exc.query_id)
    elif isinstance(exc, Busy):
        body = ErrorBody(code=exc.code, message=exc.message, retryAfterMs=exc.retry_after_ms)
    text = answer.text_of({"error": body.model_dump(exclude_none=True)})
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def ok_result(model: BaseModel) -> CallToolResult:
    data = model.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=answer.text_of(data))], structured_content=data)


def _describe(exc: ValidationError) -> str:
    # Where and what, never the rejected value (the caller's data) nor pydantic's docs URL.
    return "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors(include_url=False, include_input=False)
    )


class GatewayMCPServer(MCPServer[Any]):
    """The SDK's server, with its own failures (bad arguments, unknown tools) in the gateway's error shape."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._tool_manager.get_tool(name) is None:
            return error_result(InvalidInput(f"unknown tool {name!r}; the tools are {', '.join(MCP_TOOLS)}"))
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            log.exception("tool %r failed unexpectedly", name)
            return error_result(GatewayError(f"the {name} tool failed inside the server; the operator's log has it"))
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return error_result(InvalidInput(f"invalid arguments for {name}: {_describe(exc.__cause__)}"))
            return error_result(GatewayError(str(exc)))


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
    server = GatewayMCPServer(
        name, title="Cypher gateway", version=__version__, instructions=instructions(gateway.policy)
    )
    _declare_logging(server)

    def _caller(ctx: Context[Any, Any]) -> tuple[Principal | str, Transport]:
        """Who asked and how, for the audit line of a failure that may come before the principal is known."""
        try:
            principal, transport = resolve(ctx)
        except Exception:
            return "unknown", "stdio" if ctx.request_context.request is None else "http"
        return principal, transport

    async def _run(tool: Literal["recall", "analyze"], cypher: str, params: dict[str, Any] | None,
                   requested: list[str] | dict[str, list[str]] | None,
                   ctx: Context[Any, Any]) -> CallToolResult:  # fmt: skip
        try:
            principal, transport = resolve(ctx)
        except GatewayError as exc:
            return error_result(exc)
        except Exception as exc:  # outside the Gateway's own steps: still a typed, audited answer
            return error_result(gateway.failed_unexpectedly(tool, cypher, *_caller(ctx), exc))
        if tool not in _granted_tools(ctx, tool):
            return error_result(InsufficientScope(f"the OAuth token lacks the {tool!r} scope"))
        query_id = uuid.uuid4().hex
        try:
            result = await anyio.to_thread.run_sync(
                lambda: gateway.run(
                    tool, cypher, params, principal, transport=transport, query_id=query_id, scope=requested
                ),
                abandon_on_cancel=True,
            )
        except anyio.get_cancelled_exc_class():
            # The client cancelled or went away. The worker thread is abandoned (it ends once its
            # sandbox is gone); the sandbox is killed now, so the query stops in Neo4j as well.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(gateway.cancel, query_id)
            raise
        except GatewayError as exc:
            return error_result(exc)
        except Exception as exc:  # outside the Gateway's own steps: still a typed, audited answer
            return error_result(gateway.failed_unexpectedly(tool, cypher, *_caller(ctx), exc))
        if result.degradedReason:
            await _notify_degraded(ctx, result)
        return ok_result(result)

    @server.tool(name="recall", title=TITLES["recall"], description=recall_description(gateway.policy),
                 annotations=_READ_ONLY)  # fmt: skip
    async def recall(
        cypher: CypherText, ctx: Context[Any, Any], params: Params = None, scope: RequestedScope = None
    ) -> Annotated[CallToolResult, ToolResult]:
        return await _run("recall", cypher, params, scope, ctx)

    @server.tool(name="analyze", title=TITLES["analyze"], description=ANALYZE_DESCRIPTION, annotations=_READ_ONLY)
    async def analyze(
        cypher: CypherText, ctx: Context[Any, Any], params: Params = None, scope: RequestedScope = None
    ) -> Annotated[CallToolResult, ToolResult]:
        return await _run("analyze", cypher, params, scope, ctx)

    @server.tool(name="check", title=TITLES["check"], description=CHECK_DESCRIPTION, annotations=_READ_ONLY)
    async def check(
        cypher: CheckedText,
        tool: Annotated[Literal["recall", "analyze"], Field(description="The tool you mean to call.")],
        ctx: Context[Any, Any],
        params: Params = None,
        scope: RequestedScope = None,
    ) -> Annotated[CallToolResult, CheckResult]:
        try:
            principal, transport = resolve(ctx)
            result = await anyio.to_thread.run_sync(
                lambda: gateway.check(tool, cypher, params, principal, transport=transport, scope=scope)
            )
        except GatewayError as exc:
            return error_result(exc)
        except Exception as exc:
            return error_result(gateway.failed_unexpectedly("check", cypher, *_caller(ctx), exc))
        return ok_result(result)

    @server.tool(name="schema", title=TITLES["schema"], description=SCHEMA_DESCRIPTION, annotations=_READ_ONLY)
    async def schema(ctx: Context[Any, Any]) -> Annotated[CallToolResult, SchemaResult]:
        try:
            principal, transport = resolve(ctx)
            result = await anyio.to_thread.run_sync(lambda: gateway.schema(principal, transport=transport))
        except GatewayError as exc:
            return error_result(exc)
        except Exception as exc:
            return error_result(gateway.failed_unexpectedly("schema", "", *_caller(ctx), exc))
        if result.degradedReason:
            await _notify_degraded(ctx, result)
        return ok_result(result)

    @server.resource("policy://active", name="active-policy", title="Active policy", mime_type="application/yaml",
                     description="The active policy, as the reviewer sees it.")  # fmt: skip
    def active_policy() -> str:
        return yaml.safe_dump(gateway.policy.model_dump(mode="json"), sort_keys=False)

    @server.resource("schema://graph", name="graph-schema", title="Visible schema", mime_type="application/json",
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

    for tool_name in MCP_TOOLS:
        _forbid_unknown_arguments(server, tool_name)
    return server


async def _notify_degraded(ctx: Context[Any, Any], result: ToolResult | SchemaResult) -> None:
    # The reason is in the answer itself, which reaches every client. A log notification also
    # reaches clients that show them; the newest protocol revision deprecates them (the SDK then
    # sends one only when the request asked for it).
    with contextlib.suppress(Exception):  # a client that cannot take it still gets the answer
        await ctx.warning({"degraded": result.degraded, "reason": result.degradedReason}, logger_name=_LOGGER)


def _declare_logging(server: MCPServer[Any]) -> None:
    # Clients of the revisions that have logging expect the capability before they take log
    # notifications, and the SDK declares it only for a server that handles logging/setLevel.
    # Every level is sent: the gateway sends only warnings about degraded answers.
    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    # The SDK warns on every log notification that the feature is deprecated; the gateway knows.
    warnings.filterwarnings("ignore", message="The logging capability is deprecated", category=MCPDeprecationWarning)


def _forbid_unknown_arguments(server: MCPServer[Any], name: str) -> None:
    # The SDK's argument models ignore unknown keys; a misspelt "parms" would then be
    # silently dropped and the query run without its parameters. Refuse instead.
    tool = server._tool_manager.get_tool(name)
    assert tool is not None
    model = tool.fn_metadata.arg_model
    model.model_config["extra"] = "forbid"
    model.model_rebuild(force=True)
    tool.parameters = model.model_json_schema(by_alias=True)
