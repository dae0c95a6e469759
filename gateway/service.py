"""The core: one request's path through every layer, top to bottom.

    cypher.parse  ->  guard.enforce  ->  scope.plan  ->  runner.job_for  ->  runner.run  ->  ToolResult

The MCP server, the CLI and the must-not-retrieve runner all call ``Gateway``;
none of them re-implement a step. Nothing here imports the ``neo4j`` driver:
the only way a query reaches Neo4j is through a sandbox container.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from gateway import answer, catalogue, guard, scope
from gateway.audit import AuditEvent, AuditLog
from gateway.cypher import ParsedQuery
from gateway.cypher.ast import CypherVersion
from gateway.domain import CheckResult, LayerSwitches, Principal, SchemaResult, ToolResult, Transport
from gateway.errors import (
    GatewayError,
    InternalError,
    InvalidInput,
    Neo4jRefused,
    QueryRejected,
    QueryTimeout,
    SandboxUnavailable,
)
from gateway.policy import HiddenProperties, Limits, Policy, ToolName
from gateway.runner import Runner, error_for, job_for
from gateway.scope.narrow import RequestedScope, narrowed
from sandbox.wire import Notification, SandboxResult

log = logging.getLogger("gateway.service")

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
        disabled_reason: str | None = None,
        standing_degraded: Sequence[str] = (),
        standing_reason: str | None = None,
    ) -> None:
        self.policy = policy
        self.runner = runner
        self.audit = audit
        self.layers = layers or LayerSwitches()
        self.database = database
        # Why there is no runner at all (what compose found missing, and the fix).
        self.disabled_reason = disabled_reason
        # What serve found wrong at start-up that every answer must say (the policy's scope
        # property occurs nowhere in the graph): degraded markers, and the reason with the fix.
        self.standing_degraded = list(standing_degraded)
        self.standing_reason = standing_reason

    # --- check -------------------------------------------------------------------------------

    def check(
        self,
        tool: ToolName,
        cypher: str,
        params: Mapping[str, Any] | None,
        principal: Principal,
        *,
        transport: Transport = "direct",
        scope: RequestedScope | None = None,
    ) -> CheckResult:
        """Guard + scope rewrite, nothing run. Never raises for a bad query: it says why.

        ``scope``: the request's narrowing of the principal's attribute lists (``scope.narrow``).
        Raises ``InternalError`` only when something unexpected fails (a bug).
        """
        started = time.monotonic()
        event = AuditEvent.begin(
            query_id=uuid.uuid4().hex, principal=principal, transport=transport, tool="check",
            cypher=cypher if isinstance(cypher, str) else repr(cypher),
            param_keys=params if isinstance(params, Mapping) else [], pinned=self._pinned(tool, params),
            requested_scope=scope,
        )  # fmt: skip
        try:
            result = self._check(tool, cypher, params, principal, scope)
        except Exception as exc:
            raise self._internal(event, exc, started) from exc
        self._audit(event.checked(tool, result.allowed, result.rule, started))
        return result

    def _check(
        self,
        tool: ToolName,
        cypher: str,
        params: Mapping[str, Any] | None,
        principal: Principal,
        requested_scope: RequestedScope | None,
    ) -> CheckResult:
        try:
            prepared = self._prepare(tool, cypher, params, principal, requested_scope)
        except QueryRejected as exc:
            return CheckResult(allowed=False, rule=exc.rule, reason=exc.reason, tool=tool, policy=self.policy.name)
        except InvalidInput as exc:
            return CheckResult(
                allowed=False, rule=catalogue.INPUT_INVALID.id, reason=exc.message, tool=tool, policy=self.policy.name
            )
        return CheckResult(
            allowed=True, rule=None, reason=None, tool=tool, policy=self.policy.name, rewritten=prepared.plan.cypher
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
        query_id: str | None = None,
        scope: RequestedScope | None = None,
    ) -> ToolResult:
        """Run one agent query through every layer.

        Raises ``QueryRejected``, ``InvalidInput``, ``QueryTimeout``, ``QueryCancelled``,
        ``Neo4jRefused``, ``SandboxUnavailable`` (Neo4j unreachable from the sandbox, sandbox
        died), ``Busy`` (at capacity for the policy's wait: nothing ran) or, when anything else
        fails (a bug), ``InternalError`` with the query id. When no sandbox can be started at
        all, it answers ``degraded: ["<tool>:disabled"]`` with no rows and the reason instead:
        the query is never run anywhere else. ``query_id``: chosen by a caller that may
        :meth:`cancel` the query from another thread. ``scope``: the request's narrowing of the
        principal's attribute lists (``scope.narrow``; anything wider is refused as ``scope.wider``,
        anything the policy cannot apply as ``scope.unappliable``).
        """
        started = time.monotonic()
        query_id = query_id or uuid.uuid4().hex
        event = AuditEvent.begin(
            query_id=query_id, principal=principal, transport=transport, tool=tool,
            cypher=cypher if isinstance(cypher, str) else repr(cypher),
            param_keys=params if isinstance(params, Mapping) else [], pinned=self._pinned(tool, params),
            requested_scope=scope,
        )  # fmt: skip
        try:
            result = self._run(tool, cypher, params, principal, query_id, started, scope)
        except GatewayError as exc:
            self._audit(event.failed(exc, started))
            raise
        except Exception as exc:
            raise self._internal(event, exc, started) from exc
        self._audit(event.answered(result, started))
        return result

    def _run(
        self,
        tool: ToolName,
        cypher: str,
        params: Mapping[str, Any] | None,
        principal: Principal,
        query_id: str,
        started: float,
        requested_scope: RequestedScope | None,
        *,
        schema_query: bool = False,
    ) -> ToolResult:
        prepared = self._prepare(tool, cypher, params, principal, requested_scope, schema_query=schema_query)
        if self.runner is None:
            disabled = _disabled(query_id, tool, self.disabled_reason or "no sandbox runner is configured")
            return self._marked(disabled, standing=False, identity=not schema_query)
        limits = self.policy.tool(tool).limits
        job = job_for(
            self.policy.tool(tool), query_id=query_id, cypher=prepared.plan.cypher, params=prepared.params,
            result_check=prepared.plan.result_check, database=self.database,
            explain_check=self.layers.explain_check, cypher_version=prepared.language,
            original_cypher=prepared.text, hidden_properties=self.policy.hidden_properties.by_owner(),
            visible_properties=self.policy.visible_keys(),
        )  # fmt: skip
        try:
            sandbox_result = self.runner.run(job, principal, arrived=started)
        except SandboxUnavailable as exc:
            return self._marked(_disabled(query_id, tool, exc.message), standing=False, identity=not schema_query)
        error = error_for(sandbox_result)
        if isinstance(error, Neo4jRefused) and prepared.plan.withhold_error_details and not error.from_original:
            error = scope.withheld_details(error)
        if isinstance(error, QueryTimeout):
            error = _timeout(tool, limits)
        if error is not None:
            raise error
        notifications = sandbox_result.notifications
        if prepared.plan.withhold_data_notifications:
            notifications = scope.kept_notifications(notifications)
        # Marked before fitting: max_bytes bounds the answer as sent, its degraded markers and
        # their sentences included.
        marked = self._marked(_tool_result(tool, sandbox_result, notifications), identity=not schema_query)
        result = answer.fit(marked, limits.max_bytes)
        if result.withheld and result.rowCount < sandbox_result.row_count:
            # Rows cut to fit: count only the elements still in the answer.
            elements, _ = self.policy.withholding().apply(result.rows)
            result = result.model_copy(update={"withheld": elements})
        return result

    def _marked(self, result: ToolResult, *, standing: bool = True, identity: bool) -> ToolResult:
        """``result`` with the degraded markers an answer carries: the gateway's standing problem
        (an answer the sandbox gave), and this request's token lacking a mapped claim (``identity``;
        the schema tool's own queries leave it to the schema answer, which says it once)."""
        if standing and self.standing_degraded:
            reason = result.degradedReason or self.standing_reason
            result = result.model_copy(
                update={"degraded": [*result.degraded, *self.standing_degraded], "degradedReason": reason}
            )
        return answer.with_identity_warning(result) if identity else result

    def cancel(self, query_id: str) -> bool:
        """Stop a query :meth:`run` is running (from another thread): its sandbox is killed.

        True when it was in flight; a query that has not reached the sandbox yet is refused when it does.
        """
        return self.runner.cancel(query_id) if self.runner is not None else False

    # --- schema ------------------------------------------------------------------------------

    def schema(self, principal: Principal, *, transport: Transport = "direct") -> SchemaResult:
        """Labels, relationship types and property keys visible to ``principal`` (via the sandbox).

        One audit line (tool ``schema``, ``counted`` saying how many of each it answered), not
        one per sub-query: the agent asked one question and wrote none of the queries.
        """
        started = time.monotonic()
        event = AuditEvent.begin(
            query_id=uuid.uuid4().hex, principal=principal, transport=transport, tool="schema", cypher=None,
            param_keys=[],
        )  # fmt: skip
        try:
            result, rows, size = self._schema(principal)
        except GatewayError as exc:
            self._audit(event.failed(exc, started))
            raise
        except Exception as exc:
            raise self._internal(event, exc, started) from exc
        counted = None if result.degraded else {key: len(getattr(result, key)) for key in _SCHEMA_QUERIES}
        result = answer.with_identity_warning(result)
        self._audit(event.schema_answered(result.degraded, counted, rows, size, result.truncated, started))
        return result

    def _schema(self, principal: Principal) -> tuple[SchemaResult, int, int]:
        answer: dict[str, list[str]] = {}
        truncated = False
        rows = size = 0
        hidden = self.policy.hidden_relationship_types("analyze")
        # A key no element shows is never listed (the guard's reading: gateway.policy.key_hidden_everywhere).
        for key, cypher in _SCHEMA_QUERIES.items():
            # Each sub-query waits for its sandbox as a query of its own would (busy_wait_ms from now).
            result = self._run(
                "analyze", cypher, {}, principal, uuid.uuid4().hex, time.monotonic(), None, schema_query=True
            )
            if result.degraded and not result.columns:
                return SchemaResult(degraded=result.degraded, degradedReason=result.degradedReason), rows, size
            truncated = truncated or result.truncated
            rows, size = rows + result.rowCount, size + result.bytes
            answer[key] = [
                row[0]
                for row in result.rows
                if isinstance(row[0], str)
                and row[0] not in hidden
                and (key != "propertyKeys" or not self.policy.key_hidden_everywhere(row[0]))
            ]
        return SchemaResult(**answer, truncated=truncated), rows, size

    # --- the steps ---------------------------------------------------------------------------

    def _prepare(
        self,
        tool: ToolName,
        cypher: str,
        params: Mapping[str, Any] | None,
        principal: Principal,
        requested_scope: RequestedScope | None = None,
        *,
        schema_query: bool = False,
    ) -> _Prepared:
        if tool not in self.policy.tools:
            raise InvalidInput(f"unknown tool {tool!r}; expected one of {', '.join(self.policy.tools)}")
        if not isinstance(cypher, str) or not cypher.strip():
            raise InvalidInput("cypher must be a non-empty string")
        caller_params = guard.caller_params(params)
        _bound_params(caller_params, self.policy.tool(tool).limits)
        parsed: ParsedQuery | None = None
        if self.layers.guard or self.layers.scope_rewrite:
            parsed = guard.parse_query(cypher, self.policy.tool(tool).limits, self.policy.cypher.default_version)
        if parsed is not None and self.layers.guard:
            guard.enforce(parsed, caller_params, tool, _schema_policy(self.policy) if schema_query else self.policy)
        # Narrowed before the plan: the rewrite and the sandbox's result check both see only the
        # attribute values this request asked for; the container is still the principal's own.
        seeing = narrowed(principal, requested_scope, self.policy)
        plan = scope.plan(parsed or cypher, self.policy, tool, seeing, self.layers)
        # The scope parameter goes in last, so a caller's value for the reserved key can
        # never survive (the guard also rejects such keys outright).
        return _Prepared(
            plan=plan,
            params={**caller_params, **plan.params},
            language=parsed.language if parsed else None,
            text=parsed.text if parsed else cypher,
        )

    def failed_unexpectedly(
        self, tool: str, cypher: object, principal: Principal | str, transport: Transport, exc: BaseException
    ) -> InternalError:
        """The answer, log entry and audit line for an exception outside the steps above (the server's own)."""
        event = AuditEvent.begin(
            query_id=uuid.uuid4().hex, principal=principal, transport=transport, tool=tool,
            cypher=cypher if isinstance(cypher, str) else repr(cypher), param_keys=[],
        )  # fmt: skip
        return self._internal(event, exc, time.monotonic())

    def _pinned(self, tool: object, params: object) -> dict[str, object]:
        """The caller's values of the parameters ``tool``'s pins bind: what a read was confined to,
        which the audit keeps (every other parameter value stays out of it)."""
        if not isinstance(params, Mapping) or tool not in self.policy.tools:
            return {}
        names = {pin.parameter for pin in self.policy.tools[tool].pins.values()}
        return {name: params[name] for name in sorted(names) if name in params}

    def _internal(self, event: AuditEvent, exc: BaseException, started: float) -> InternalError:
        # The traceback is for the operator's log; the caller gets the code and the id only.
        log.error("internal error answering query %s", event.query_id, exc_info=exc)
        error = InternalError(event.query_id)
        try:
            self._audit(event.failed(error, started))
        except Exception:  # the caller still gets its typed answer
            log.exception("could not write the audit line of query %s", event.query_id)
        return error

    def _audit(self, event: AuditEvent) -> None:
        if self.audit is not None:
            self.audit.write(event)


class _Prepared(BaseModel):
    """One request after the guard and the scope plan: what the sandbox job is built from."""

    plan: scope.ScopePlan
    params: dict[str, Any]
    language: CypherVersion | None  # the version the guard read the query as; the job runs under it
    text: str  # the agent's query as read (Unicode spaces made ASCII): what the sandbox EXPLAINs first


def _schema_policy(policy: Policy) -> Policy:
    """The policy the schema tool's own queries are checked under: its ``keys(n)`` lists every key.

    Only those fixed queries (``_SCHEMA_QUERIES``), never an agent's: ``_schema`` drops the hidden
    keys from their answer, so the hidden-properties rule, which refuses ``keys()``, is left out.
    """
    if not policy.hides_properties():
        return policy
    return policy.model_copy(update={"hidden_properties": HiddenProperties(), "visible_properties": None})


def _bound_params(params: Mapping[str, Any], limits: Limits) -> None:
    """Refuse a parameter map over the policy's bounds, on every transport (stdio has no body limit)."""
    rule = catalogue.INPUT_PARAMS_TOO_LARGE
    if len(params) > limits.max_param_keys:
        raise rule.rejected(f"{len(params)} parameters; the limit is {limits.max_param_keys}")
    longest = max((len(key) for key in params), default=0)
    if longest > limits.max_param_key_chars:
        raise rule.rejected(f"a parameter name is {longest} characters long; the limit is {limits.max_param_key_chars}")
    size = len(json.dumps(params, default=str, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > limits.max_params_bytes:
        raise rule.rejected(f"the parameters take {size} bytes as JSON; the limit is {limits.max_params_bytes}")


def _disabled(query_id: str, tool: ToolName, reason: str) -> ToolResult:
    return ToolResult(queryId=query_id, tool=tool, degraded=[f"{tool}:disabled"], degradedReason=reason)


def _timeout(tool: ToolName, limits: Limits) -> QueryTimeout:
    # Neo4j's own message ("Retry your operation ... you should see a successful result")
    # invites the same timeout again; say which limit was reached and what changes the outcome.
    return QueryTimeout(
        f"the query reached the policy's time limit ({limits.timeout_seconds:g} s for {tool}) and was stopped; "
        "running it again will time out again. Make it do less: bound variable-length patterns (*1..3), "
        "start from a narrower MATCH (a label and a property), aggregate earlier, add LIMIT. "
        f"The limit itself is the policy's tools.{tool}.limits.timeout_seconds, an operator setting."
    )


def _tool_result(tool: ToolName, result: SandboxResult, notifications: list[Notification]) -> ToolResult:
    degraded = ["scope:redacted"] if result.redacted else []
    return ToolResult(
        queryId=result.query_id, tool=tool, columns=result.columns, rows=result.rows, rowCount=result.row_count,
        bytes=result.bytes, truncated=result.truncated, truncation=result.truncation, degraded=degraded,
        redacted=result.redacted, withheld=result.withheld, queryType=result.query_type,
        durationMs=result.duration_ms,
        notifications=notifications,
    )  # fmt: skip
