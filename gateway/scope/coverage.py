"""Which patterns of a query the rewrite must have scoped, found without asking the rewrite.

Every pattern a query can match is a ``Path`` in the tree, wherever it occurs
(MATCH and OPTIONAL MATCH, EXISTS/COUNT/COLLECT, pattern comprehensions,
pattern predicates, shortestPath, CALL subqueries, UNION branches, and any
construct added to the parser later). A path nested in a quantified group is
part of its enclosing path and is covered by that path's predicate.
"""

from __future__ import annotations

from collections.abc import Collection

from gateway.cypher import ParsedQuery, ast


def patterns(parsed: ParsedQuery) -> list[ast.Path]:
    """Every outermost path pattern in ``parsed``, in source order."""
    nested: set[ast.Path] = set()
    found: list[ast.Path] = []
    for node in parsed.walk():  # pre-order: a group is met before the path inside it
        if isinstance(node, ast.QuantifiedPath):
            nested.add(node.path)
        elif isinstance(node, ast.Path) and node not in nested:
            found.append(node)
    return found


def unscoped_patterns(parsed: ParsedQuery, scoped: Collection[ast.Path]) -> list[ast.Path]:
    """The patterns of ``parsed`` that are not in ``scoped`` (those that received a predicate)."""
    return [path for path in patterns(parsed) if path not in scoped]
