"""The static guard: decides, before anything runs, whether a query may run.

``check(query, params, tool, policy)`` takes the query's text (read here with
``parse_query``, i.e. ``gateway.cypher.parse``) or a query already parsed,
computes the facts every rule asks about from the finished tree
(``facts.collect_facts``), then applies the rules of ``rules.RULES`` in order;
the first objection decides. It never raises for bad input: every outcome is a
:class:`Decision`. ``enforce`` is the same walk for a caller that wants the
refusal as a ``QueryRejected``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gateway import catalogue, cypher
from gateway.cypher import CypherSyntaxError, CypherTooDeep, CypherTooLarge, CypherUnsupported, ParsedQuery
from gateway.cypher.ast import CypherVersion
from gateway.errors import InvalidInput, QueryRejected
from gateway.guard.facts import collect_facts
from gateway.guard.rules import RULE_IDS, RULES, Context, GuardRule
from gateway.policy import Limits, Policy, ToolName

__all__ = [
    "RULES",
    "RULE_IDS",
    "Decision",
    "GuardRule",
    "caller_params",
    "check",
    "enforce",
    "parse_query",
]


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
    def reject(cls, rule: catalogue.Rule, reason: str, parsed: ParsedQuery | None = None) -> Decision:
        return cls(allowed=False, rule=rule.id, reason=reason, parsed=parsed)

    @classmethod
    def refused(cls, error: QueryRejected, parsed: ParsedQuery | None = None) -> Decision:
        return cls(allowed=False, rule=error.rule, reason=error.reason, parsed=parsed)


def caller_params(params: object) -> dict[str, Any]:
    """The caller's parameters as a dict: an object whose names are non-empty strings, else ``InvalidInput``."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InvalidInput(f"params must be an object, got {type(params).__name__}")
    if any(not isinstance(key, str) or not key for key in params):
        raise InvalidInput("every parameter name must be a non-empty string")
    return dict(params)


def parse_query(text: str, limits: Limits, language: CypherVersion = "5") -> ParsedQuery:
    """``gateway.cypher.parse`` with its failure as a ``QueryRejected`` carrying the catalogue's rule.

    ``language`` is the policy's ``cypher.default_version``: how a query without a prefix is read.
    """
    try:
        return cypher.parse(
            text, max_chars=limits.max_query_chars, max_depth=limits.max_nesting_depth, language=language
        )
    except CypherUnsupported as exc:
        raise catalogue.CYPHER25_UNSUPPORTED.rejected(_sentence(str(exc))) from None
    except CypherTooLarge as exc:
        raise catalogue.INPUT_TOO_LARGE.rejected(_sentence(exc.message)) from None
    except CypherTooDeep as exc:
        raise catalogue.INPUT_TOO_DEEP.rejected(_sentence(exc.message)) from None
    except CypherSyntaxError as exc:
        raise catalogue.PARSE_FAILED.rejected(
            _sentence(f"the query is not Cypher this gateway can parse: {exc}")
        ) from None


def enforce(parsed: ParsedQuery, params: Mapping[str, Any], tool: ToolName, policy: Policy) -> None:
    """Apply every rule to ``parsed``; the first objection raises ``QueryRejected`` with its rule."""
    ctx = Context(
        parsed=parsed, facts=collect_facts(parsed), params=params, tool=tool, tool_policy=policy.tool(tool),
        policy=policy,
    )  # fmt: skip
    for rule in RULES:
        if rule.check is None:
            continue
        reason = rule.check(ctx)
        if reason is not None:
            raise rule.entry.rejected(_sentence(reason))


def check(query: str | ParsedQuery, params: Mapping[str, Any], tool: ToolName, policy: Policy) -> Decision:
    if not isinstance(query, str | ParsedQuery):
        return Decision.reject(catalogue.PARSE_FAILED, f"The query must be a string, got {type(query).__name__}.")
    if tool not in policy.tools:
        return Decision.reject(catalogue.TOOL_UNKNOWN, f"unknown tool {tool!r}")
    parsed: ParsedQuery | None = None
    try:
        parsed = (
            query
            if isinstance(query, ParsedQuery)
            else parse_query(query, policy.tool(tool).limits, policy.cypher.default_version)
        )
        enforce(parsed, caller_params(params), tool, policy)
    except QueryRejected as exc:
        return Decision.refused(exc, parsed)
    except InvalidInput as exc:
        return Decision.reject(catalogue.INPUT_INVALID, _sentence(exc.message), parsed)
    return Decision.allow(parsed)


def _sentence(reason: str) -> str:
    reason = reason[0].upper() + reason[1:]
    return reason if reason.endswith(".") else reason + "."
