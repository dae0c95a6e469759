"""The procedures and functions the scope rewrite lets a query call, each group with its reason.

A call is safe when it cannot reach an element outside the caller's layers: it computes on
the values it is given, or reads an element the query already holds (and every element a
scoped query holds came from a pattern that received its visibility predicate). Which
functions those are is written in the one function table (``gateway.guard.functions``, each
row's ``scope``); this module reads it. Anything the table does not let through is refused
(``scope.unsupported``): user-defined functions, most of APOC (``apoc.nodes.get(ids)`` fetches
by id, ``apoc.node.degree(n)`` counts hidden relationships), and the built-ins of
``REFUSED_FUNCTIONS``. Every built-in function of Neo4j 5.26 is in exactly one of
``SAFE_FUNCTION_GROUPS`` and ``REFUSED_FUNCTIONS`` (tests/unit/test_scope_calls.py holds the
list ``SHOW FUNCTIONS`` gives; an integration test compares it with the running server).
"""

from __future__ import annotations

from gateway.guard import functions

# The fields YIELD * gives for the procedures that return names (labels, types, keys), so the
# column walk knows them. The rewrite refuses every procedure call (SECURITY.md, layer 2):
# these name labels, types and keys that only hidden elements carry.
NAME_ONLY_PROCEDURES: dict[str, tuple[str, ...]] = {
    "db.labels": ("label",),
    "db.relationshiptypes": ("relationshipType",),
    "db.propertykeys": ("propertyKey",),
}


def _safe_groups() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The function table's groups the rewrite lets through: each group's reason and names."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for row in functions.FUNCTIONS.values():
        if isinstance(row.scope, functions.Scoped):
            groups.setdefault(row.scope.group, (row.scope.reason, []))[1].append(row.name)
    return {group: (reason, tuple(names)) for group, (reason, names) in groups.items()}


SAFE_FUNCTION_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = _safe_groups()
SAFE_FUNCTION_PREFIXES: tuple[str, ...] = functions.SCOPED_NAMESPACES

REFUSED_FUNCTIONS: dict[str, str] = {
    row.name: row.scope.reason for row in functions.FUNCTIONS.values() if isinstance(row.scope, functions.Refused)
}

SAFE_FUNCTIONS: frozenset[str] = frozenset(name.lower() for _, names in SAFE_FUNCTION_GROUPS.values() for name in names)


def function_is_safe(name: str) -> bool:
    lowered = name.lower()
    return lowered in SAFE_FUNCTIONS or lowered.startswith(SAFE_FUNCTION_PREFIXES)


def why_refused(name: str) -> str:
    """Why a function the rewrite does not let through is refused."""
    for refused, reason in REFUSED_FUNCTIONS.items():
        if refused.lower() == name.lower():
            return reason
    return "it is not on the scope rewrite's list of functions that cannot reach elements outside the caller's layers"
