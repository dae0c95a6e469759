"""The core: one request's path through every layer, top to bottom.

    guard.check  ->  scope.rewrite  ->  runner.job_for  ->  runner.run  ->  ToolResult

The MCP server, the CLI and the must-not-retrieve runner all call ``Gateway``;
none of them re-implement a step. Nothing here imports the ``neo4j`` driver:
the only way a query reaches Neo4j is through a sandbox container.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from gateway import guard, scope
from gateway.audit import AuditEvent, AuditLog
from gateway.domain import CheckResult, LayerSwitches, Principal, SchemaResult, ToolResult, Transport
from gateway.errors import GatewayError, InvalidInput, Neo4jRefused, QueryRejected, SandboxUnavailable
from gateway.guard.parse import GuardParseError, ParsedQuery
from gateway.policy import Policy, ToolName
from gateway.runner import Runner, error_for, job_for
from sandbox.wire import SandboxResult, ScopeCheck

# The schema tool reads only what the caller can see: plain queries that go through
# the scope rewrite like any agent query, not db.labels() (which sees everything).
_SCHEMA_QUERIES: dict[str, str] = {
    "labels": "MATCH (n) UNWIND labels(n) AS value RETURN DISTINCT value ORDER BY value",
    "relationshipTypes": "MATCH ()-[r]->() RETURN DISTINCT type(r) AS value ORDER BY value",
    "propertyKeys": (
        "CALL { MATCH (n) UNWIND keys(n) AS value RETURN value "
        "UNION MATCH ()-[r]->() UNWIND keys(r) AS value RETURN value } "
        "RETURN DISTINCT value ORDER BY value"
    ),
}


class Gateway:
    """The gateway core. Construct once with the policy loaded once; share across requests."""

    def __init__(
        self,
        policy: Policy,
        runner: Runner | None,
        audit: AuditLog | None = None,
        layers: LayerSwitches | None = None,
        database: str | None = None,
    ) -> None:
        self.policy = policy
        self.runner = runner
        self.audit = audit
        self.layers = layers or LayerSwitches()
        self.database = database

    # --- check -------------------------------------------------------------------------------

    def check(
        self,
        tool: ToolName,
        cypher: str,
        params: Mapping[str, Any] | None,
        principal: Principal,
        *,
        transport: Transport = "direct",
    ) -> CheckResult:
        """Guard + scope rewrite, nothing run. Never raises for a bad query: it says why."""
        started = time.monotonic()
        result = self._check(tool, cypher, params, principal)
        event = AuditEvent.begin(
            query_id=uuid.uuid4().hex, principal=principal.name, transport=transport, tool="check",
            cypher=cypher if isinstance(cypher, str) else repr(cypher),
            param_keys=sorted(params) if isinstance(params, Mapping) else [],
        )  # fmt: skip
        self._audit(event.checked(tool, result.allowed, result.rule, started))
        return result

    def _check(
        self, tool: ToolName, cypher: str, params: Mapping[str, Any] | None, principal: Principal
    ) -> CheckResult:
        try:
            prepared = self._prepare(tool, cypher, params, principal)
        except QueryRejected as exc:
            return CheckResult(allowed=False, rule=exc.rule, reason=exc.reason, tool=tool, policy=self.policy.name)
        except InvalidInput as exc:
            return CheckResult(
                allowed=False, rule="input.invalid", reason=exc.message, tool=tool, policy=self.policy.name
            )
        return CheckResult(
            allowed=True, rule=None, reason=None, tool=tool, policy=self.policy.name, rewritten=prepared.cypher
        )

    # --- run ---------------------------------------------------------------------------------

    def run(
        self,
        tool: ToolName,
        cypher: str,
        params: Mapping[str, Any] | None,
        principal: Principal,
        *,
        transport: Transport = "direct",
    ) -> ToolResult:
        """Run one agent query through every layer.

        Raises ``QueryRejected``, ``InvalidInput``, ``QueryTimeout``, ``Neo4jRefused`` or
        ``SandboxUnavailable`` (Neo4j unreachable from the sandbox, sandbox died). When no
        sandbox can be started at all, it answers ``degraded: ["<tool>:disabled"]`` with no
        rows instead: the query is never run anywhere else.
        """
        started = time.monotonic()
        query_id = uuid.uuid4().hex
        event = AuditEvent.begin(
            query_id=query_id, principal=principal.name, transport=transport, tool=tool,
            cypher=cypher if isinstance(cypher, str) else repr(cypher),
            param_keys=sorted(params) if isinstance(params, Mapping) else [],
        )  # fmt: skip
        try:
            result = self._run(tool, cypher, params, principal, query_id)
        except GatewayError as exc:
            self._audit(event.failed(exc, started))
            raise
        self._audit(event.answered(result, started))
        return result

    def _run(
        self, tool: ToolName, cypher: str, params: Mapping[str, Any] | None, principal: Principal, query_id: str
    ) -> ToolResult:
        prepared = self._prepare(tool, cypher, params, principal)
        if self.runner is None:
            return ToolResult(queryId=query_id, tool=tool, degraded=[f"{tool}:disabled"])
        job = job_for(
            self.policy.tool(tool), query_id=query_id, cypher=prepared.cypher, params=prepared.params,
            result_check=self._result_check(tool, principal), database=self.database,
            explain_check=self.layers.explain_check,
        )  # fmt: skip
        try:
            sandbox_result = self.runner.run(job)
        except SandboxUnavailable:
            return ToolResult(queryId=query_id, tool=tool, degraded=[f"{tool}:disabled"])
        error = error_for(sandbox_result)
        if isinstance(error, Neo4jRefused) and self.layers.scope_rewrite:
            error = withheld_details(error)
        if error is not None:
            raise error
        return _tool_result(tool, sandbox_result)

    # --- schema ------------------------------------------------------------------------------

    def schema(self, principal: Principal, *, transport: Transport = "direct") -> SchemaResult:
        """Labels, relationship types and property keys visible to ``principal`` (via the sandbox)."""
        answer: dict[str, list[str]] = {}
        truncated = False
        hidden = self._hidden_names("analyze")
        for key, cypher in _SCHEMA_QUERIES.items():
            result = self.run("analyze", cypher, {}, principal, transport=transport)
            if result.degraded and not result.columns:
                return SchemaResult(degraded=result.degraded)
            truncated = truncated or result.truncated
            answer[key] = [row[0] for row in result.rows if isinstance(row[0], str) and row[0] not in hidden]
        return SchemaResult(**answer, truncated=truncated)

    # --- the steps ---------------------------------------------------------------------------

    def _prepare(
        self, tool: ToolName, cypher: str, params: Mapping[str, Any] | None, principal: Principal
    ) -> _Prepared:
        if tool not in self.policy.tools:
            raise InvalidInput(f"unknown tool {tool!r}; expected one of {', '.join(self.policy.tools)}")
        if not isinstance(cypher, str) or not cypher.strip():
            raise InvalidInput("cypher must be a non-empty string")
        caller_params = _validate_params(params)
        parsed: ParsedQuery | None = None
        if self.layers.guard:
            decision = guard.check(cypher, caller_params, tool, self.policy)
            if not decision.allowed:
                raise QueryRejected(decision.rule or "guard", decision.reason or "rejected by the guard")
            parsed = decision.parsed
        text = cypher
        if self.layers.scope_rewrite:
            if parsed is None:
                try:
                    parsed = guard.parse(cypher, limits=self.policy.tool(tool).limits)
                except GuardParseError as exc:
                    raise QueryRejected(exc.rule, exc.reason) from exc
            text = _rewrite(parsed, self.policy, tool)
        # Injected last, so a caller's value for the reserved key can never survive
        # (the guard also rejects such keys outright).
        job_params = {**caller_params, self.policy.scope.scope_parameter: sorted(principal.scope)}
        return _Prepared(cypher=text, params=job_params)

    def _result_check(self, tool: ToolName, principal: Principal) -> ScopeCheck | None:
        if not self.layers.result_check:
            return None
        return ScopeCheck(
            layers_property=self.policy.scope.layers_property,
            layers=sorted(principal.scope),
            hidden_relationship_types=sorted(self._hidden_names(tool)),
        )

    def _hidden_names(self, tool: ToolName) -> set[str]:
        scope = self.policy.scope
        hidden = set(self.policy.tool(tool).denied_relationship_types)
        if not scope.allow_bookkeeping.get(tool, False):
            hidden |= set(scope.bookkeeping_relationship_types)
        return hidden

    def _audit(self, event: AuditEvent) -> None:
        if self.audit is not None:
            self.audit.write(event)


class _Prepared(BaseModel):
    cypher: str
    params: dict[str, Any]


def withheld_details(error: Neo4jRefused) -> Neo4jRefused:
    """A runtime error can carry a property value, quoted or not.

    ``Text cannot be parsed to a Date "…"`` (sent with a SyntaxError code),
    ``Unknown coordinate reference system: <any string>``, ``MonthOfYear …: <any int>``:
    and Neo4j does not promise to evaluate the scope predicate before the agent's
    own expressions, so the value could belong to a hidden element. With scope on,
    only Neo4j's error code goes back; the guard has already parsed the query, so
    little help is lost.
    """
    code = error.neo4j_code or "Neo.ClientError"
    return Neo4jRefused(
        f"{code} (details withheld: Neo4j's message can quote data outside your scope)", error.neo4j_code
    )


def _validate_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidInput(f"params must be an object, got {type(params).__name__}")
    bad = [k for k in params if not isinstance(k, str) or not k]
    if bad:
        raise InvalidInput("every parameter name must be a non-empty string")
    return dict(params)


def _rewrite(parsed: ParsedQuery, policy: Policy, tool: ToolName) -> str:
    try:
        return scope.rewrite(parsed, policy=policy, tool=tool).cypher
    except scope.ScopeUnsupported as exc:
        raise QueryRejected("scope.unsupported", str(exc)) from exc


def _tool_result(tool: ToolName, result: SandboxResult) -> ToolResult:
    degraded = ["scope:redacted"] if result.redacted else []
    return ToolResult(
        queryId=result.query_id, tool=tool, columns=result.columns, rows=result.rows, rowCount=result.row_count,
        bytes=result.bytes, truncated=result.truncated, truncation=result.truncation, degraded=degraded,
        redacted=result.redacted, queryType=result.query_type, durationMs=result.duration_ms,
        notifications=result.notifications,
    )  # fmt: skip
