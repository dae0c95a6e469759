"""Scope enforcement: rewrite an agent's query so it can only see the caller's layers.

``rewrite(parsed, policy=…, tool=…)`` runs the passes of
``gateway.scope.passes.PASSES`` over the guard's parse tree and returns the
rewritten Cypher, which references ``$<policy.scope.scope_parameter>``; the
core service injects the caller's layer ids under that key. Constructs the
passes cannot scope raise :class:`ScopeUnsupported` (rule ``scope.unsupported``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from gateway.guard.parse import ParsedQuery
from gateway.policy import Policy, ToolName
from gateway.scope.passes import PASSES, ScopeUnsupported, run_passes

__all__ = ["PASSES", "ScopeUnsupported", "ScopedQuery", "rewrite"]


class ScopedQuery(BaseModel):
    model_config = ConfigDict(frozen=True)

    cypher: str


def rewrite(parsed: ParsedQuery, *, policy: Policy, tool: ToolName) -> ScopedQuery:
    return ScopedQuery(cypher=run_passes(parsed, policy=policy, tool=tool))
