"""The sandbox's EXPLAIN check: Neo4j's own parser and planner as a second, independent guard.

A query runs only if Neo4j plans it as read-only (query type ``r``) and every
procedure in its plan is on the policy's allow-list. It fails closed: a
procedure call whose name cannot be read from the plan is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# "db.labels() :: (label :: STRING)" -> "db.labels"
_PROCEDURE_NAME = re.compile(r"^\s*`?([A-Za-z_][\w.`]*?)`?\s*\(")

# Operators that change the graph or the schema, or are commands rather than queries.
# Neo4j 5.26 plans SHOW SETTINGS / SHOW TRANSACTIONS / SHOW PROCEDURES and even
# TERMINATE TRANSACTIONS as query type "r", so the query type alone is not enough:
# this list is checked on every transport (on the Query API, which reports no type,
# it is the whole check).
_UPDATING_OPERATOR = re.compile(
    r"^(Create|Merge|Delete|DetachDelete|Set|Remove|Foreach|LoadCSV|Transaction|DoNothing|Drop|Alter"
    r"|Rename|Grant|Revoke|Deny|Start|Stop|Terminate|EmptyResult|Show|AdministrationCommand)",
    re.IGNORECASE,
)


# Read operators that still reach outside the database: Neo4j itself fetches the URL
# (SSRF, local files, exfiltration by URL), so a read query type is not enough.
_EXTERNAL_OPERATORS = frozenset({"loadcsv"})


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


def check_no_external_access(plan: Mapping[str, Any] | None) -> None:
    if plan is None:
        raise ExplainRejected("Neo4j returned no plan for EXPLAIN; refusing")
    for op in _operators(plan):
        if _operator_name(op).lower() in _EXTERNAL_OPERATORS:
            raise ExplainRejected(f"the plan contains {_operator_name(op)}, which reads from outside the database")


def check_query_type(query_type: str | None) -> None:
    if query_type != "r":
        raise ExplainRejected(f"Neo4j plans this query as type {query_type!r}; only read queries ('r') run")


def _finish_operator(plan: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The EmptyResult a read ending in FINISH plans: the only child of the root ProduceResults.

    ``MATCH (n) FINISH`` plans ``ProduceResults > EmptyResult > AllNodesScan``. EmptyResult only
    discards rows; a write without RETURN plans it in the same place, above its Create/Merge/…
    operator, which the check still finds below it. Anywhere else it stays refused.
    """
    children = plan.get("children") or []
    if _operator_name(plan).lower() == "produceresults" and len(children) == 1:
        child: Mapping[str, Any] = children[0]
        if _operator_name(child).lower() == "emptyresult":
            return child
    return None


def check_operators_read_only(plan: Mapping[str, Any] | None) -> None:
    """Refuse any updating, administrative or command operator in the plan."""
    if plan is None:
        raise ExplainRejected("Neo4j returned no plan for EXPLAIN; refusing")
    finish = _finish_operator(plan)
    for op in _operators(plan):
        if op is finish:
            continue
        name = _operator_name(op)
        if _UPDATING_OPERATOR.match(name):
            raise ExplainRejected(f"the plan contains the operator {name}; only plain read queries run")
