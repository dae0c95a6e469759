"""The facts every rule asks about: clause kinds, names, parameters, bounds.

The parser records them while it builds the tree (``Parser.facts``), which
costs nothing extra; :func:`collect_facts` recomputes the same facts by walking
a finished tree, and the tests check that the two always agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.guard import ast


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
    hops: list[Hops] = field(default_factory=list)


_CLAUSE_KIND = {
    ast.With: "WITH",
    ast.Return: "RETURN",
    ast.Unwind: "UNWIND",
    ast.CallSubquery: "CALL_SUBQUERY",
    ast.CallProcedure: "CALL_PROCEDURE",
    ast.Finish: "FINISH",
}


def collect_facts(statements: list[ast.Statement], text: str) -> Facts:
    facts = Facts()
    for statement in statements:
        for node in statement.walk():
            note_fact(node, facts, text)
    return facts


def note_fact(node: ast.Node, facts: Facts, text: str) -> None:
    if isinstance(node, ast.Clause):
        if isinstance(node, ast.Match):
            facts.clause_kinds.add("OPTIONAL_MATCH" if node.optional else "MATCH")
            if node.where is not None:
                facts.clause_kinds.add("WHERE")
        elif isinstance(node, ast.Forbidden):
            facts.forbidden.append(node)
            facts.clause_kinds.add(node.keyword.replace(" ", "_"))
        else:
            facts.clause_kinds.add(_CLAUSE_KIND[type(node)])
            if isinstance(node, ast.With) and node.where is not None:
                facts.clause_kinds.add("WHERE")
            elif isinstance(node, ast.CallSubquery) and node.in_transactions:
                facts.in_transactions = True
            elif isinstance(node, ast.CallProcedure):
                facts.procedures.append(node.name)
                if node.where is not None:
                    facts.clause_kinds.add("WHERE")
    elif isinstance(node, ast.Projection):
        if node.order_by:
            facts.clause_kinds.add("ORDER_BY")
        if node.skip is not None:
            facts.clause_kinds.add("SKIP")
        if node.limit is not None:
            facts.clause_kinds.add("LIMIT")
    elif isinstance(node, ast.Union):
        facts.clause_kinds.add("UNION")
    elif isinstance(node, ast.FunctionCall):
        facts.functions.append(node.name)
    elif isinstance(node, ast.Parameter):
        facts.parameters.add(node.name)
    elif isinstance(node, ast.NodePattern):
        if node.labels is not None:
            facts.labels.update(node.labels.names())
    elif isinstance(node, ast.LabelCheck):
        # In an expression the same syntax tests node labels or a relationship type.
        names = node.labels.names()
        facts.labels.update(names)
        facts.relationship_types.update(names)
    elif isinstance(node, ast.RelPattern):
        if node.types is not None:
            facts.relationship_types.update(node.types.names())
        for bound in (node.length, node.quantifier):
            if bound is not None:
                facts.hops.append(Hops(bound.max, text[node.start : node.end]))
    elif isinstance(node, ast.QuantifiedPath) and node.quantifier is not None:
        per_iteration = sum(1 for n in node.path.walk() if isinstance(n, ast.RelPattern))
        q_max = node.quantifier.max
        facts.hops.append(Hops(None if q_max is None else q_max * per_iteration, text[node.start : node.end]))
