"""The rewritten query still plans well in Neo4j: index seeks and label scans stay, and it is a read.

A WHERE holding a condition that could raise runs behind one guard; the conditions that cannot
raise are repeated in front of it so the planner can still seek on them. Checked in Neo4j's
own EXPLAIN, on an index the fixture creates under its own label and drops afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gateway import guard, scope
from gateway.domain import Principal
from gateway.policy import load_policy
from tests.support.graph import labelled_graph, unique_label
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)


@pytest.fixture(scope="module")
def indexed(neo4j_driver: Any) -> Iterator[str]:
    label = unique_label("RewritePlan")
    index = f"idx_{label.lower()}"
    seed = [f"UNWIND range(1, 500) AS i CREATE (:{label} {{key: 'k' + toString(i), n: i}})"]
    with labelled_graph(neo4j_driver, label, seed):
        neo4j_driver.execute_query(f"CREATE INDEX {index} IF NOT EXISTS FOR (n:{label}) ON (n.key)")
        neo4j_driver.execute_query("CALL db.awaitIndexes(60)")
        try:
            yield label
        finally:
            neo4j_driver.execute_query(f"DROP INDEX {index} IF EXISTS")


def _operators(plan: Any) -> set[str]:
    found, stack = set(), [plan]
    while stack:
        op = stack.pop()
        found.add(str(op["operatorType"]).split("@", 1)[0])
        stack.extend(op.get("children") or [])
    return found


def _plan(driver: Any, query: str) -> tuple[str, set[str]]:
    decision = guard.check(query, {"k": "k7"}, "analyze", POLICY)
    assert decision.allowed and decision.parsed is not None, decision.reason
    rewritten = scope.plan(decision.parsed, POLICY, "analyze", Principal(name="plans")).cypher
    _, summary, _ = driver.execute_query("EXPLAIN " + rewritten, {"k": "k7", "__gw_scope": []})
    return summary.query_type, _operators(summary.plan)


@pytest.mark.parametrize(
    ("where", "operator"),
    [
        ("n.key = $k", "NodeIndexSeek"),
        ("n.key = $k AND 1 / n.n = 1", "NodeIndexSeek"),  # guarded, the seekable condition repeated
        ("1 / n.n = 1 AND n.key = $k AND toString(n.n) = '7'", "NodeIndexSeek"),
        ("1 / n.n = 1", "NodeByLabelScan"),
    ],
)
def test_seeks_and_label_scans_survive_the_guard(neo4j_driver: Any, indexed: str, where: str, operator: str) -> None:
    query_type, operators = _plan(neo4j_driver, f"MATCH (n:{indexed}) WHERE {where} RETURN n.n AS n")
    assert query_type == "r"
    assert operator in operators, operators


def test_many_patterns_with_conditions_still_plan_as_a_read_with_seeks(neo4j_driver: Any, indexed: str) -> None:
    parts = ", ".join(f"(n{i}:{indexed} {{key: $k}})" for i in range(6))
    conditions = " AND ".join(f"1 / n{i}.n = 1" for i in range(6))
    query_type, operators = _plan(neo4j_driver, f"MATCH {parts} WHERE {conditions} RETURN n0.n AS n")
    assert query_type == "r" and "NodeIndexSeek" in operators, operators
