"""Scope enforcement: rewrite an agent's query so it can only see the caller's layers.

Placeholder until the rewrite passes land: it fails closed (every query is
refused with ``scope.unsupported``), never open.
"""

from __future__ import annotations

from pydantic import BaseModel

from gateway.guard.parse import ParsedQuery
from gateway.policy import Policy, ToolName


class ScopeUnsupported(Exception):
    """The query uses a construct the rewriter cannot scope safely (rule ``scope.unsupported``)."""


class ScopedQuery(BaseModel):
    cypher: str


def rewrite(parsed: ParsedQuery, *, policy: Policy, tool: ToolName) -> ScopedQuery:
    raise ScopeUnsupported("the scope rewrite is not available yet; refusing rather than running unscoped")
