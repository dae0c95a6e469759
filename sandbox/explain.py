"""The sandbox's EXPLAIN check: Neo4j's own parser and planner as a second, independent guard.

A query runs only if Neo4j plans it as read-only: query type ``r`` (where the
transport reports one), every operator in the plan on the allow-list of read
operators below, and every procedure in the plan on the policy's allow-list. It
fails closed: an operator it does not know, or a procedure call whose name
cannot be read from the plan, is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# "db.labels() :: (label :: STRING)" -> "db.labels"
_PROCEDURE_NAME = re.compile(r"^\s*`?([A-Za-z_][\w.`]*?)`?\s*\(")

# Every operator a pure read plans with: an allow-list, so that an operator Neo4j adds or
# renames (LockingMerge, MergeInto, LockNodes, SubqueryForeach, SetDynamicProperty came that
# way) costs a refusal, never a write. Gathered by EXPLAIN-ing a broad corpus on Neo4j 5.26
# and 2026.x (Cypher 5 and 25): the operators of every plan of query type "r", with the
# Cypher manual's documented read operators the corpus did not reach (docs/decisions/0013).
# Deliberately absent although Neo4j types their plans "r": LoadCSV (Neo4j fetches the URL
# itself: SSRF, local files, exfiltration), Show* and TerminateTransactions (commands that
# READ mode runs), TransactionApply (commits transactions of its own); and every updating,
# locking, schema and administration operator.
READ_OPERATORS = frozenset({
    # leaves: scans and seeks
    "AllNodesScan", "NodeByLabelScan", "NodeByIdSeek", "NodeByElementIdSeek", "NodeCountFromCountStore",
    "RelationshipCountFromCountStore", "IntersectionNodeByLabelsScan", "SubtractionNodeByLabelsScan",
    "UnionNodeByLabelsScan", "NodeIndexScan", "NodeIndexSeek", "NodeIndexSeekByRange", "NodeIndexContainsScan",
    "NodeIndexEndsWithScan", "NodeUniqueIndexSeek", "NodeUniqueIndexSeekByRange", "MultiNodeIndexSeek",
    "DirectedAllRelationshipsScan", "UndirectedAllRelationshipsScan", "DirectedRelationshipTypeScan",
    "UndirectedRelationshipTypeScan", "DirectedUnionRelationshipTypesScan", "UndirectedUnionRelationshipTypesScan",
    "DirectedRelationshipByIdSeek", "UndirectedRelationshipByIdSeek", "DirectedRelationshipByElementIdSeek",
    "UndirectedRelationshipByElementIdSeek", "DirectedRelationshipIndexScan", "UndirectedRelationshipIndexScan",
    "DirectedRelationshipIndexSeek", "UndirectedRelationshipIndexSeek", "DirectedRelationshipIndexSeekByRange",
    "UndirectedRelationshipIndexSeekByRange", "DirectedRelationshipIndexContainsScan",
    "UndirectedRelationshipIndexContainsScan", "DirectedRelationshipIndexEndsWithScan",
    "UndirectedRelationshipIndexEndsWithScan", "DirectedRelationshipUniqueIndexSeek",
    "UndirectedRelationshipUniqueIndexSeek", "DirectedRelationshipUniqueIndexSeekByRange",
    "UndirectedRelationshipUniqueIndexSeekByRange", "Argument", "EmptyRow",
    # the parallel runtime's scans and seeks (Enterprise, hosted servers)
    "PartitionedAllNodesScan", "PartitionedNodeByLabelScan", "PartitionedIntersectionNodeByLabelsScan",
    "PartitionedSubtractionNodeByLabelsScan", "PartitionedUnionNodeByLabelsScan", "PartitionedNodeIndexScan",
    "PartitionedNodeIndexSeek", "PartitionedNodeIndexSeekByRange", "PartitionedDirectedAllRelationshipsScan",
    "PartitionedUndirectedAllRelationshipsScan", "PartitionedDirectedRelationshipTypeScan",
    "PartitionedUndirectedRelationshipTypeScan", "PartitionedDirectedRelationshipTypesScan",
    "PartitionedDirectedUnionRelationshipTypesScan", "PartitionedUndirectedUnionRelationshipTypesScan",
    "PartitionedDirectedRelationshipIndexScan", "PartitionedUndirectedRelationshipIndexScan",
    "PartitionedDirectedRelationshipIndexSeek", "PartitionedUndirectedRelationshipIndexSeek",
    "PartitionedDirectedRelationshipIndexSeekByRange", "PartitionedUndirectedRelationshipIndexSeekByRange",
    "PartitionedUnwind",
    # Neo4j 2026.x: dynamic labels and types (MATCH (n:$($label))), SEARCH, faster shortest paths
    "DynamicLabelNodeLookup", "DynamicDirectedRelationshipTypeLookup", "DynamicUndirectedRelationshipTypeLookup",
    "NodeVectorIndexSearch", "DirectedRelationshipVectorIndexSearch", "UndirectedRelationshipVectorIndexSearch",
    "NodeFulltextIndexSearch", "DirectedRelationshipFulltextIndexSearch", "UndirectedRelationshipFulltextIndexSearch",
    "BidirectionalRepeat", "PathPropagatingBFS", "ValueMergeJoin",
    # traversal
    "Expand", "OptionalExpand", "VarLengthExpand", "ShortestPath", "StatefulShortestPath", "Repeat",
    "ProjectEndpoints", "TriadicSelection", "TriadicBuild", "TriadicFilter",
    # nested loops, joins and subqueries
    "Apply", "SemiApply", "AntiSemiApply", "LetSemiApply", "LetAntiSemiApply", "SelectOrSemiApply",
    "SelectOrAntiSemiApply", "LetSelectOrSemiApply", "LetSelectOrAntiSemiApply", "RollUpApply", "Anti", "Optional",
    # shortestPath's exhaustive fallback plans these too; MERGE's writes under them are still refused by name
    "ConditionalApply", "AntiConditionalApply",
    "CartesianProduct", "NodeHashJoin", "NodeLeftOuterHashJoin", "NodeRightOuterHashJoin", "ValueHashJoin",
    "Union", "OrderedUnion",
    # row operators
    "Filter", "Projection", "CacheProperties", "Unwind", "Distinct", "OrderedDistinct", "EagerAggregation",
    "OrderedAggregation", "Sort", "PartialSort", "Top", "PartialTop", "Limit", "ExhaustiveLimit", "Skip", "Eager",
    "NullifyMetadata", "ArgumentTracker", "ProduceResults",
    # Not EmptyResult: accepted only where FINISH plans it (_finish_operator), refused anywhere else.
    # Procedures are read or not by name: check_procedures holds them to the policy's exact allow-list.
    "ProcedureCall",
})  # fmt: skip

# The modes an operator may carry in parentheses: Expand(Into), VarLengthExpand(Pruning,BFS,All),
# StatefulShortestPath(All, Trail). Not "Locking": the unique-index seeks that MERGE plans.
READ_MODES = frozenset({"All", "Into", "Pruning", "BFS", "Trail", "Walk"})

# Why some operators that plan as reads are still refused (for the refusal's message).
_WHY = {
    "LoadCSV": "Neo4j fetches the URL itself: SSRF, local files, exfiltration",
    "TerminateTransactions": "a command that READ mode runs",
    "TransactionApply": "it commits transactions of its own",
}


class ExplainRejected(Exception):
    """The plan is not a pure read, or it calls a procedure that is not allowed."""


def _operators(plan: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    stack = [plan]
    while stack:
        op = stack.pop()
        yield op
        stack.extend(op.get("children") or [])


def _operator_name(op: Mapping[str, Any]) -> str:
    return str(op.get("operatorType") or op.get("operator_type") or "").split("@", 1)[0]


def is_read_operator(name: str) -> bool:
    """True when ``name`` ("Expand(All)", "NodeIndexSeek", ...) is a read operator on the allow-list."""
    base, paren, rest = name.partition("(")
    if base not in READ_OPERATORS:
        return False
    if not paren:
        return True
    modes, close, tail = rest.partition(")")
    return bool(close) and not tail and all(mode.strip() in READ_MODES for mode in modes.split(","))


def plan_procedures(plan: Mapping[str, Any]) -> list[str]:
    """Fully qualified names of every procedure the plan calls."""
    names: list[str] = []
    for op in _operators(plan):
        if _operator_name(op).lower() != "procedurecall":
            continue
        args = op.get("args") or op.get("arguments") or {}
        match = _PROCEDURE_NAME.match(str(args.get("Details", "")))
        if not match:
            raise ExplainRejected("the plan calls a procedure whose name could not be read; refusing")
        names.append(match.group(1).replace("`", ""))
    return names


def check_procedures(plan: Mapping[str, Any] | None, allowed: Iterable[str]) -> None:
    if plan is None:
        raise ExplainRejected("Neo4j returned no plan for EXPLAIN; refusing")
    allow = {name.lower() for name in allowed}
    for name in plan_procedures(plan):
        if name.lower() not in allow:
            raise ExplainRejected(f"procedure {name} is not on the allow-list")


def check_query_type(query_type: str | None) -> None:
    if query_type != "r":
        raise ExplainRejected(f"Neo4j plans this query as type {query_type!r}; only read queries ('r') run")


def _finish_operator(plan: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The EmptyResult a read ending in FINISH plans: the root, or the only child of the root ProduceResults.

    ``MATCH (n) FINISH`` plans ``ProduceResults > EmptyResult > AllNodesScan``. EmptyResult only
    discards rows; a write without RETURN plans it in the same place, above its Create/Merge/…
    operator, which the check still finds below it. Anywhere else it stays refused.
    """
    if _operator_name(plan).lower() == "emptyresult":  # the root itself, as some plans print it
        return plan
    children = plan.get("children") or []
    if _operator_name(plan).lower() == "produceresults" and len(children) == 1:
        child: Mapping[str, Any] = children[0]
        if _operator_name(child).lower() == "emptyresult":
            return child
    return None


def check_operators_read_only(plan: Mapping[str, Any] | None) -> None:
    """Refuse any operator that is not a read operator on the allow-list."""
    if plan is None:
        raise ExplainRejected("Neo4j returned no plan for EXPLAIN; refusing")
    finish = _finish_operator(plan)
    for op in _operators(plan):
        if op is finish:
            continue
        name = _operator_name(op)
        if not is_read_operator(name):
            base = name.partition("(")[0]
            why = _WHY.get(base) or ("a command that READ mode runs" if base.startswith("Show") else "")
            raise ExplainRejected(
                f"the plan contains the operator {name or '<unnamed>'}, which is not a read operator"
                f"{f' ({why})' if why else ''}; only plain read queries run"
            )


def check_plan(plan: Mapping[str, Any] | None, procedures_allowed: Iterable[str]) -> None:
    """The whole plan check, for every transport: read operators only, allowed procedures only."""
    check_operators_read_only(plan)
    check_procedures(plan, procedures_allowed)
