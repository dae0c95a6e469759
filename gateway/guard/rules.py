"""Every rule the guard applies, in the order it applies them.

A rule is a small pure function of (parsed query, caller parameters, tool
policy) that returns ``None`` or a sentence naming the problem. The first rule
that objects decides. The first three ids are raised by the parse stage
(``gateway.guard.parse``) and listed here so this file is the whole catalogue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from gateway.guard.parse import ParsedQuery
from gateway.policy import Policy, ToolName, ToolPolicy


@dataclass(frozen=True)
class Context:
    parsed: ParsedQuery
    params: Mapping[str, Any]
    tool: ToolName
    tool_policy: ToolPolicy
    policy: Policy


@dataclass(frozen=True)
class Rule:
    id: str
    sentence: str  # what the rule guarantees, for reviewers (`policy show`) and docs
    check: Callable[[Context], str | None] | None  # None: enforced by the parse stage


def _multiple_statements(ctx: Context) -> str | None:
    n = len(ctx.parsed.statements)
    return f"the request holds {n} statements separated by ';'; send exactly one" if n > 1 else None


def _prefix(ctx: Context) -> str | None:
    for st in ctx.parsed.statements:
        if st.prefix:
            return f"{st.prefix} is not accepted: the gateway plans and checks the query itself"
    return None


def _options(ctx: Context) -> str | None:
    for st in ctx.parsed.statements:
        if st.cypher_version is not None and st.cypher_version != "5":
            return f"CYPHER {st.cypher_version} is not supported; only Cypher 5 (or no version prefix) is"
        if st.options:
            return f"query options ({', '.join(st.options)}) are not accepted"
    return None


def _forbidden(category: str, what: str) -> Callable[[Context], str | None]:
    def check(ctx: Context) -> str | None:
        for node in ctx.parsed.facts.forbidden:
            if node.category == category:
                return f"{node.keyword} {what}"
        return None

    return check


def _in_transactions(ctx: Context) -> str | None:
    write = _forbidden("write", "writes to the graph; only reads are allowed")(ctx)
    if write:
        return write
    if ctx.parsed.facts.in_transactions:
        return "CALL { … } IN TRANSACTIONS commits batches on its own; it is a write-only construct"
    return None


_CLAUSE_FACT_TO_POLICY = {
    "MATCH", "OPTIONAL_MATCH", "WHERE", "WITH", "RETURN", "UNWIND", "ORDER_BY", "SKIP", "LIMIT",
    "UNION", "CALL_SUBQUERY", "CALL_PROCEDURE", "FINISH",
}


def _clauses(ctx: Context) -> str | None:
    allowed = {str(c) for c in ctx.tool_policy.allowed_clauses}
    for kind in sorted(ctx.parsed.facts.clause_kinds):
        if kind not in allowed:
            label = kind.replace("_", " ")
            if kind not in _CLAUSE_FACT_TO_POLICY:
                return f"{label} is never allowed"
            return f"{label} is not allowed for the {ctx.tool} tool by policy {ctx.policy.name!r}"
    return None


def _procedures(ctx: Context) -> str | None:
    # Exact and case-sensitive, as Neo4j resolves procedure names.
    allowed = ctx.tool_policy.procedures_allowed
    for name in ctx.parsed.facts.procedures:
        if name not in allowed:
            hint = f" (allowed: {', '.join(sorted(ctx.tool_policy.procedures_allowed))})" if allowed else ""
            return f"procedure {name} is not on the {ctx.tool} tool's allow-list{hint}"
    return None


def _functions(ctx: Context) -> str | None:
    for name in ctx.parsed.facts.functions:
        lowered = name.lower()
        for pattern in ctx.tool_policy.functions_denied:
            if fnmatchcase(lowered, pattern.lower()):
                return (
                    f"function {name} is denied (matches {pattern!r}): "
                    "it can read files or URLs, run dynamic Cypher or write"
                )
    return None


def _param_keys(ctx: Context) -> str | None:
    for key in ctx.params:
        if not isinstance(key, str) or not key:
            return f"parameter names must be non-empty strings, got {key!r}"
    return None


def _reserved(ctx: Context) -> str | None:
    reserved = ctx.policy.reserved_parameters
    for key in ctx.params:
        if reserved.is_reserved(key):
            return f"parameter ${key} is reserved for the gateway and cannot be supplied by the caller"
    for name in sorted(ctx.parsed.facts.parameters):
        if reserved.is_reserved(name):
            return f"parameter ${name} is reserved for the gateway and cannot be referenced by the query"
    return None


def _required(ctx: Context) -> str | None:
    for name in ctx.tool_policy.required_parameters:
        if name not in ctx.parsed.facts.parameters:
            return f"the {ctx.tool} tool requires the query to reference ${name}"
        if name not in ctx.params:
            return f"the {ctx.tool} tool requires the parameter {name!r} to be supplied"
    return None


def _labels(ctx: Context) -> str | None:
    denied = {d.lower(): d for d in ctx.tool_policy.denied_labels}
    for label in sorted(ctx.parsed.facts.labels):
        if label.lower() in denied:
            return f"label {label} may not be queried with the {ctx.tool} tool"
    return None


def _rel_types(ctx: Context) -> str | None:
    denied = {d.lower(): d for d in ctx.tool_policy.denied_relationship_types}
    for rel in sorted(ctx.parsed.facts.relationship_types):
        if rel.lower() in denied:
            return f"relationship type {rel} is bookkeeping and may not be queried with the {ctx.tool} tool"
    return None


def _unbounded(ctx: Context) -> str | None:
    limits = ctx.tool_policy.limits
    if limits.allow_unbounded_var_length:
        return None
    for hops in ctx.parsed.facts.hops:
        if hops.max_hops is None:
            return (
                f"variable-length pattern {hops.text!r} has no upper bound; "
                f"give one of at most {limits.max_hops} (for example *1..{limits.max_hops})"
            )
    return None


def _hops(ctx: Context) -> str | None:
    limit = ctx.tool_policy.limits.max_hops
    for hops in ctx.parsed.facts.hops:
        if hops.max_hops is not None and hops.max_hops > limit:
            return (
                f"variable-length pattern {hops.text!r} can traverse {hops.max_hops} relationships; "
                f"the limit is {limit}"
            )
    return None


RULES: tuple[Rule, ...] = (
    Rule("input.too_large", "A query longer than limits.max_query_chars is refused before it is read.", None),
    Rule("input.too_deep", "Brackets or expressions nested deeper than limits.max_nesting_depth are refused.", None),
    Rule("parse.failed", "A query the gateway's Cypher parser cannot read is refused (fail closed).", None),
    Rule("statement.multiple", "A request holds exactly one statement.", _multiple_statements),
    Rule("query.prefix", "EXPLAIN and PROFILE prefixes are refused; the sandbox runs its own EXPLAIN.", _prefix),
    Rule("query.option", "Only Cypher 5 is accepted, without planner or runtime options.", _options),
    Rule("admin.command", "Schema, user, privilege, database and transaction commands are refused.",
         _forbidden("admin", "is an administration command; only reads are allowed")),
    Rule("database.use", "USE is refused: every query runs against the configured database only.",
         _forbidden("use", "switches database; queries run against the configured database only")),
    Rule("load_csv", "LOAD CSV is refused in every form: it reads files and URLs.",
         _forbidden("load_csv", "reads files or URLs and is never allowed")),
    Rule("write.clause", "Write clauses (CREATE, INSERT, MERGE, SET, REMOVE, DELETE, FOREACH) and "
         "CALL { … } IN TRANSACTIONS are refused anywhere, including subqueries and UNION branches.",
         _in_transactions),
    Rule("clause.not_allowed", "Only the clause kinds the tool's policy lists may appear.", _clauses),
    Rule("procedure.not_allowed", "Only procedures on the tool's allow-list may be called.", _procedures),
    Rule("function.denied", "Functions matching the tool's deny-list (file, URL, dynamic Cypher, writes) are refused.",
         _functions),
    Rule("param.invalid", "Parameter names are non-empty strings.", _param_keys),
    Rule("param.reserved", "Reserved parameter keys can be neither supplied nor referenced by the caller.", _reserved),
    Rule("param.required", "Parameters the tool requires must be referenced by the query and supplied.", _required),
    Rule("label.denied", "Labels the tool's policy denies may not appear.", _labels),
    Rule("relationship.denied", "Relationship types the tool's policy denies (bookkeeping) may not appear.",
         _rel_types),
    Rule("pattern.unbounded", "Variable-length patterns need an upper bound unless the policy allows unbounded ones.",
         _unbounded),
    Rule("pattern.too_many_hops", "A variable-length pattern may traverse at most limits.max_hops relationships.",
         _hops),
)

RULE_IDS: frozenset[str] = frozenset(r.id for r in RULES)
