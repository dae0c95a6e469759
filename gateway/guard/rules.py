"""Every rule the guard applies, in the order it applies them.

A rule is a small pure function of (parsed query, its facts, caller parameters,
tool policy) that returns ``None`` or a sentence naming the problem. The first
rule that objects decides. Each is paired with its entry in
``gateway.catalogue`` (id and sentence). The first three entries are the parse
stage's (``gateway.guard.parse_query``): listed here so this tuple is every
rule the guard answers with, in order (cypher25.unsupported is the parse stage's too).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Any

from gateway import catalogue
from gateway.cypher import ParsedQuery, ast
from gateway.guard.facts import Facts
from gateway.guard.hidden import hidden_property_use, invisible_property_use
from gateway.guard.size_walk import SizeReport, measure
from gateway.policy import Policy, ToolName, ToolPolicy


@dataclass(frozen=True)
class Context:
    parsed: ParsedQuery
    facts: Facts
    params: Mapping[str, Any]
    tool: ToolName
    tool_policy: ToolPolicy
    policy: Policy

    @cached_property
    def sizes(self) -> SizeReport:
        """The size check's objections, computed once, when the first size rule asks."""
        return measure(self.parsed, self.params, self.tool_policy.limits)


@dataclass(frozen=True)
class GuardRule:
    entry: catalogue.Rule
    check: Callable[[Context], str | None] | None  # None: enforced by the parse stage

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def sentence(self) -> str:
        return self.entry.sentence


def _multiple_statements(ctx: Context) -> str | None:
    n = len(ctx.parsed.statements)
    return f"the request holds {n} statements separated by ';'; send exactly one" if n > 1 else None


def _prefix(ctx: Context) -> str | None:
    for st in ctx.parsed.statements:
        if st.prefix:
            return f"{st.prefix} is not accepted: the gateway plans and checks the query itself"
    return None


def _options(ctx: Context) -> str | None:
    settings = ctx.policy.cypher
    versions = ", ".join(sorted(settings.versions, key=int))
    for st in ctx.parsed.statements:
        if st.cypher_version is not None and st.cypher_version not in settings.versions:
            return f"CYPHER {st.cypher_version} is not accepted; policy {ctx.policy.name!r} accepts Cypher {versions}"
        if st.cypher_version is None and st.language not in settings.versions:
            return f"queries are read as Cypher {st.language}, which policy {ctx.policy.name!r} does not accept"
        for option in st.options:
            name, _, value = option.partition("=")
            if not settings.option_allowed(name, value):
                return (
                    f"the query option {option} is not on policy {ctx.policy.name!r}'s allow-list "
                    "(only planner and runtime choices it lists are accepted)"
                )
    return None


def _forbidden(category: str, what: str) -> Callable[[Context], str | None]:
    def check(ctx: Context) -> str | None:
        for node in ctx.facts.forbidden:
            if node.category == category:
                return f"{node.keyword} {what}"
        return None

    return check


def _in_transactions(ctx: Context) -> str | None:
    write = _forbidden("write", "writes to the graph; only reads are allowed")(ctx)
    if write:
        return write
    if ctx.facts.in_transactions:
        return "CALL { … } IN TRANSACTIONS commits batches on its own; it is a write-only construct"
    return None


_CLAUSE_FACT_TO_POLICY = {
    "MATCH",
    "OPTIONAL_MATCH",
    "WHERE",
    "WITH",
    "RETURN",
    "UNWIND",
    "ORDER_BY",
    "SKIP",
    "LIMIT",
    "UNION",
    "CALL_SUBQUERY",
    "CALL_PROCEDURE",
    "FINISH",
    "LET",
    "FILTER",
}


def _clauses(ctx: Context) -> str | None:
    allowed = {str(c) for c in ctx.tool_policy.allowed_clauses}
    for kind in sorted(ctx.facts.clause_kinds):
        if kind not in allowed:
            label = kind.replace("_", " ")
            if kind not in _CLAUSE_FACT_TO_POLICY:
                return f"{label} is never allowed"
            return f"{label} is not allowed for the {ctx.tool} tool by policy {ctx.policy.name!r}"
    return None


def _procedures(ctx: Context) -> str | None:
    # Exact and case-sensitive, as Neo4j resolves procedure names.
    allowed = ctx.tool_policy.procedures_allowed
    for name in ctx.facts.procedures:
        if name not in allowed:
            hint = f" (allowed: {', '.join(sorted(ctx.tool_policy.procedures_allowed))})" if allowed else ""
            return f"procedure {name} is not on the {ctx.tool} tool's allow-list{hint}"
    return None


def _functions(ctx: Context) -> str | None:
    for name in ctx.facts.functions:
        lowered = name.lower()
        for pattern in ctx.tool_policy.functions_denied:
            if fnmatchcase(lowered, pattern.lower()):
                return (
                    f"function {name} is denied (matches {pattern!r}): "
                    "it can read files or URLs, run dynamic Cypher or write"
                )
    return None


def _reserved(ctx: Context) -> str | None:
    reserved = ctx.policy.reserved_parameters
    for key in ctx.params:
        if reserved.is_reserved(key):
            return f"parameter ${key} is reserved for the gateway and cannot be supplied by the caller"
    for name in sorted(ctx.facts.parameters):
        if reserved.is_reserved(name):
            return f"parameter ${name} is reserved for the gateway and cannot be referenced by the query"
    return None


def _required(ctx: Context) -> str | None:
    for name in ctx.tool_policy.required_parameters:
        if name not in ctx.facts.parameters:
            return f"the {ctx.tool} tool requires the query to reference ${name}"
        if name not in ctx.params:
            return f"the {ctx.tool} tool requires the parameter {name!r} to be supplied"
    return None


def _dynamic_names(ctx: Context, node: ast.LabelDynamic) -> list[str] | None:
    """The names a dynamic label or type stands for, when the text and the parameters fix them; else None."""
    expr = ast.unparen(node.expression)
    value: Any
    if isinstance(expr, ast.Parameter):
        if expr.name not in ctx.params:
            return None
        value = ctx.params[expr.name]
    elif isinstance(expr, ast.Literal):
        value = expr.value
    elif isinstance(expr, ast.ListLiteral) and all(isinstance(ast.unparen(i), ast.Literal) for i in expr.items):
        value = [typing.cast(ast.Literal, ast.unparen(i)).value for i in expr.items]
    else:
        return None
    values = value if isinstance(value, list) else [value]
    return values if all(isinstance(v, str) for v in values) else None


def _denied_name(
    ctx: Context, names: set[str], dynamic: list[ast.LabelDynamic], denied_names: frozenset[str], what: str
) -> str | None:
    denied = {d.lower() for d in denied_names}
    for name in sorted(names):
        if name.lower() in denied:
            return f"{what} {name}"
    if not denied:
        return None
    for node in dynamic:
        resolved = _dynamic_names(ctx, node)
        if resolved is None:
            return (
                f"{what} {ctx.parsed.source(node)}, computed at run time, cannot be checked against the deny-list; "
                "pass the name as a parameter or write it out"
            )
        for name in resolved:
            if name.lower() in denied:
                return f"{what} {name} (from {ctx.parsed.source(node)})"
    return None


def _labels(ctx: Context) -> str | None:
    found = _denied_name(ctx, ctx.facts.labels, ctx.facts.dynamic_labels, ctx.tool_policy.denied_labels, "label")
    return f"{found} may not be queried with the {ctx.tool} tool" if found else None


def _rel_types(ctx: Context) -> str | None:
    denied = ctx.tool_policy.denied_relationship_types
    found = _denied_name(ctx, ctx.facts.relationship_types, ctx.facts.dynamic_types, denied, "relationship type")
    return f"{found} is bookkeeping and may not be queried with the {ctx.tool} tool" if found else None


def _hidden_properties(ctx: Context) -> str | None:
    return hidden_property_use(ctx.parsed, ctx.params, ctx.policy.hidden_properties.names(), ctx.policy.name)


def _invisible_properties(ctx: Context) -> str | None:
    visible = ctx.policy.visible_properties
    if visible is None:
        return None
    return invisible_property_use(ctx.parsed, ctx.params, visible.names(), ctx.policy.name)


def _unbounded(ctx: Context) -> str | None:
    limits = ctx.tool_policy.limits
    if limits.allow_unbounded_var_length:
        return None
    for hops in ctx.facts.hops:
        if hops.max_hops is None:
            return (
                f"variable-length pattern {hops.text!r} has no upper bound; "
                f"give one of at most {limits.max_hops} (for example *1..{limits.max_hops})"
            )
    return None


def _hops(ctx: Context) -> str | None:
    limit = ctx.tool_policy.limits.max_hops
    for hops in ctx.facts.hops:
        if hops.max_hops is not None and hops.max_hops > limit:
            return (
                f"variable-length pattern {hops.text!r} can traverse {hops.max_hops} relationships; "
                f"the limit is {limit}"
            )
    return None


def _size(entry: catalogue.Rule) -> Callable[[Context], str | None]:
    def check(ctx: Context) -> str | None:
        return ctx.sizes.first(entry)

    return check


RULES: tuple[GuardRule, ...] = (
    GuardRule(catalogue.INPUT_TOO_LARGE, None),
    GuardRule(catalogue.INPUT_TOO_DEEP, None),
    GuardRule(catalogue.PARSE_FAILED, None),
    GuardRule(catalogue.CYPHER25_UNSUPPORTED, None),
    GuardRule(catalogue.STATEMENT_MULTIPLE, _multiple_statements),
    GuardRule(catalogue.QUERY_PREFIX, _prefix),
    GuardRule(catalogue.QUERY_OPTION, _options),
    GuardRule(catalogue.ADMIN_COMMAND, _forbidden("admin", "is an administration command; only reads are allowed")),
    GuardRule(
        catalogue.DATABASE_USE,
        _forbidden("use", "switches database; queries run against the configured database only"),
    ),
    GuardRule(catalogue.LOAD_CSV, _forbidden("load_csv", "reads files or URLs and is never allowed")),
    GuardRule(catalogue.WRITE_CLAUSE, _in_transactions),
    GuardRule(catalogue.CLAUSE_NOT_ALLOWED, _clauses),
    GuardRule(catalogue.PROCEDURE_NOT_ALLOWED, _procedures),
    GuardRule(catalogue.FUNCTION_DENIED, _functions),
    GuardRule(catalogue.FUNCTION_UNREVIEWED, _size(catalogue.FUNCTION_UNREVIEWED)),
    GuardRule(catalogue.PARAM_RESERVED, _reserved),
    GuardRule(catalogue.PARAM_REQUIRED, _required),
    GuardRule(catalogue.LABEL_DENIED, _labels),
    GuardRule(catalogue.RELATIONSHIP_DENIED, _rel_types),
    GuardRule(catalogue.PROPERTY_HIDDEN, _hidden_properties),
    GuardRule(catalogue.PROPERTY_NOT_VISIBLE, _invisible_properties),
    GuardRule(catalogue.PATTERN_UNBOUNDED, _unbounded),
    GuardRule(catalogue.PATTERN_TOO_MANY_HOPS, _hops),
    GuardRule(catalogue.SIZE_RANGE, _size(catalogue.SIZE_RANGE)),
    GuardRule(catalogue.SIZE_ITERATIONS, _size(catalogue.SIZE_ITERATIONS)),
    GuardRule(catalogue.SIZE_ELEMENTS, _size(catalogue.SIZE_ELEMENTS)),
    GuardRule(catalogue.SIZE_STRING, _size(catalogue.SIZE_STRING)),
    GuardRule(catalogue.SIZE_OPERANDS, _size(catalogue.SIZE_OPERANDS)),
    GuardRule(catalogue.SIZE_ACCUMULATOR, _size(catalogue.SIZE_ACCUMULATOR)),
    GuardRule(catalogue.REGEX_BACKTRACKING, _size(catalogue.REGEX_BACKTRACKING)),
)

RULE_IDS: frozenset[str] = frozenset(r.id for r in RULES)
