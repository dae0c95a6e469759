"""The static guard: decides, before anything runs, whether a query may run.

``check(query, params, tool, policy)`` parses the query once with the
gateway's own Cypher parser (``gateway.guard.parse``), then applies the rules
of ``gateway.guard.rules.RULES`` in order; the first objection decides. It
never raises for bad input: every outcome is a :class:`Decision`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gateway.guard.parse import GuardParseError, ParsedQuery, parse
from gateway.guard.rules import RULE_IDS, RULES, Context, Rule
from gateway.policy import Policy, ToolName

__all__ = ["RULES", "RULE_IDS", "Decision", "GuardParseError", "ParsedQuery", "Rule", "check", "parse"]


class Decision(BaseModel):
    """The guard's answer. ``parsed`` is the tree the scope rewrite reuses (not serialised)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    allowed: bool
    rule: str | None
    reason: str | None
    parsed: ParsedQuery | None = Field(default=None, exclude=True, repr=False)

    @classmethod
    def allow(cls, parsed: ParsedQuery) -> Decision:
        return cls(allowed=True, rule=None, reason=None, parsed=parsed)

    @classmethod
    def reject(cls, rule: str, reason: str, parsed: ParsedQuery | None = None) -> Decision:
        return cls(allowed=False, rule=rule, reason=reason, parsed=parsed)


def check(query: str, params: Mapping[str, Any], tool: ToolName, policy: Policy) -> Decision:
    if not isinstance(query, str):
        return Decision.reject("parse.failed", f"the query must be a string, got {type(query).__name__}")
    if tool not in policy.tools:
        return Decision.reject("tool.unknown", f"unknown tool {tool!r}")
    tool_policy = policy.tool(tool)
    try:
        parsed = parse(query, limits=tool_policy.limits)
    except GuardParseError as exc:
        return Decision.reject(exc.rule, _sentence(exc.reason))
    ctx = Context(parsed=parsed, params=params, tool=tool, tool_policy=tool_policy, policy=policy)
    for rule in RULES:
        if rule.check is None:
            continue
        reason = rule.check(ctx)
        if reason is not None:
            return Decision.reject(rule.id, _sentence(reason), parsed)
    return Decision.allow(parsed)


def _sentence(reason: str) -> str:
    reason = reason[0].upper() + reason[1:]
    return reason if reason.endswith(".") else reason + "."
