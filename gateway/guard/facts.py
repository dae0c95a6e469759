"""The facts every rule asks about: clause kinds, names, parameters, bounds.

:func:`collect_facts` computes them from the finished tree in one iterative
walk (a deep tree cannot overflow the stack), so the parser only builds the
tree and every rule reads the same facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.cypher import ParsedQuery, ast


@dataclass(frozen=True)
class Hops:
    """One variable-length construct: ``[*1..3]``, ``-[:R]->{2,5}``, ``((a)-->(b))+``.

    ``max_hops`` is the most relationships it can traverse (a quantified path
    repeats every relationship inside it); None means unbounded.
    """

    max_hops: int | None
    text: str


@dataclass
class Facts:
    """Everything a rule asks about, collected in one walk over the whole tree."""

    clause_kinds: set[str] = field(default_factory=set)
    forbidden: list[ast.Forbidden] = field(default_factory=list)
    in_transactions: bool = False
    procedures: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    parameters: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    relationship_types: set[str] = field(default_factory=set)
    # Labels and types computed at run time (``$(expr)``): the rules resolve them from the parameters or refuse.
    dynamic_labels: list[ast.LabelDynamic] = field(default_factory=list)
    dynamic_types: list[ast.LabelDynamic] = field(default_factory=list)
    hops: list[Hops] = field(default_factory=list)


def collect_facts(parsed: ParsedQuery) -> Facts:
    facts = Facts()
    text = parsed.text
    notes = _NOTES
    for node in parsed.walk():
        note = notes.get(type(node))
        if note is not None:
            note(node, facts, text)
    return facts


# --- what each kind of node tells the rules (looked up by exact type: the tree's classes are final)


def _match(node: ast.Match, facts: Facts, text: str) -> None:
    facts.clause_kinds.add("OPTIONAL_MATCH" if node.optional else "MATCH")
    if node.where is not None:
        facts.clause_kinds.add("WHERE")


def _forbidden(node: ast.Forbidden, facts: Facts, text: str) -> None:
    facts.forbidden.append(node)
    facts.clause_kinds.add(node.keyword.replace(" ", "_"))


def _clause(kind: str) -> Callable[[ast.Clause, Facts, str], None]:
    def note(node: ast.Clause, facts: Facts, text: str) -> None:
        facts.clause_kinds.add(kind)

    return note


def _with(node: ast.With, facts: Facts, text: str) -> None:
    facts.clause_kinds.add("WITH")
    if node.where is not None:
        facts.clause_kinds.add("WHERE")


def _call_subquery(node: ast.CallSubquery, facts: Facts, text: str) -> None:
    facts.clause_kinds.add("CALL_SUBQUERY")
    if node.in_transactions:
        facts.in_transactions = True


def _call_procedure(node: ast.CallProcedure, facts: Facts, text: str) -> None:
    facts.clause_kinds.add("CALL_PROCEDURE")
    facts.procedures.append(node.name)
    if node.where is not None:
        facts.clause_kinds.add("WHERE")


def _projection(node: ast.Projection | ast.OrderBySkipLimit, facts: Facts, text: str) -> None:
    # A projection's ORDER BY / SKIP / LIMIT, or the same standing as a clause of their own.
    if node.order_by:
        facts.clause_kinds.add("ORDER_BY")
    if node.skip is not None:
        facts.clause_kinds.add("SKIP")
    if node.limit is not None:
        facts.clause_kinds.add("LIMIT")


def _union(node: ast.Union, facts: Facts, text: str) -> None:
    facts.clause_kinds.add("UNION")


def _dynamic(labels: ast.LabelExpression) -> list[ast.LabelDynamic]:
    return [n for n in labels.walk() if isinstance(n, ast.LabelDynamic)]


def _function(node: ast.FunctionCall, facts: Facts, text: str) -> None:
    facts.functions.append(node.name)


def _parameter(node: ast.Parameter, facts: Facts, text: str) -> None:
    facts.parameters.add(node.name)


def _node_pattern(node: ast.NodePattern, facts: Facts, text: str) -> None:
    if node.labels is not None:
        facts.labels.update(node.labels.names())
        facts.dynamic_labels.extend(_dynamic(node.labels))


def _label_check(node: ast.LabelCheck, facts: Facts, text: str) -> None:
    # In an expression the same syntax tests node labels or a relationship type.
    names = node.labels.names()
    facts.labels.update(names)
    facts.relationship_types.update(names)
    facts.dynamic_labels.extend(_dynamic(node.labels))
    facts.dynamic_types.extend(_dynamic(node.labels))


def _rel_pattern(node: ast.RelPattern, facts: Facts, text: str) -> None:
    if node.types is not None:
        facts.relationship_types.update(node.types.names())
        facts.dynamic_types.extend(_dynamic(node.types))
    for bound in (node.length, node.quantifier):
        if bound is not None:
            facts.hops.append(Hops(bound.max, text[node.start : node.end]))


def _quantified_path(node: ast.QuantifiedPath, facts: Facts, text: str) -> None:
    if node.quantifier is None:
        return
    per_iteration = sum(1 for n in node.path.walk() if isinstance(n, ast.RelPattern))
    q_max = node.quantifier.max
    facts.hops.append(Hops(None if q_max is None else q_max * per_iteration, text[node.start : node.end]))


_NOTES: dict[type[ast.Node], Callable[[Any, Facts, str], None]] = {
    ast.Match: _match,
    ast.Forbidden: _forbidden,
    ast.With: _with,
    ast.Return: _clause("RETURN"),
    ast.Unwind: _clause("UNWIND"),
    ast.OrderBySkipLimit: _projection,
    ast.Let: _clause("LET"),
    ast.Filter: _clause("FILTER"),
    ast.CallSubquery: _call_subquery,
    ast.CallProcedure: _call_procedure,
    ast.Finish: _clause("FINISH"),
    ast.Projection: _projection,
    ast.Union: _union,
    ast.FunctionCall: _function,
    ast.Parameter: _parameter,
    ast.NodePattern: _node_pattern,
    ast.LabelCheck: _label_check,
    ast.RelPattern: _rel_pattern,
    ast.QuantifiedPath: _quantified_path,
}
