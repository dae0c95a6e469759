"""The EXPLAIN check's read-operator allow-list against the real planner.

Both directions on the public corpus: every query the guard allows plans only with
allow-listed operators (the list refuses no legitimate read), and every write, schema or
administration query Neo4j plans is refused by the plan check alone (its operators or its
procedures), whatever query type Neo4j gives it: the Query API of 5.26 reports none.
"""

from __future__ import annotations

from typing import Any

from sandbox.explain import ExplainRejected, check_plan, is_read_operator
from tests.support.corpus import CorpusCase, load_corpus, plans_on_this_server, policy_for

CORPUS = load_corpus()


def _explain(session: Any, case: CorpusCase) -> Any:
    return session.run("EXPLAIN " + case["query"], case["params"]).consume()


def _operators(plan: dict[str, Any]) -> list[str]:
    names = [str(plan["operatorType"]).split("@", 1)[0]]
    for child in plan.get("children") or []:
        names += _operators(child)
    return names


def test_every_allowed_corpus_read_passes_the_plan_check(neo4j_driver: Any, neo4j_connection: Any) -> None:
    refused: list[str] = []
    checked = 0
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        for case in CORPUS:
            if case["expect"] != "allow" or "requires-apoc" in case["tags"] or not plans_on_this_server(case):
                continue
            summary = _explain(session, case)
            allowed = policy_for(case).tool(case["tool"]).procedures_allowed
            try:
                check_plan(summary.plan, allowed)
            except ExplainRejected as exc:
                refused.append(f"{case['id']}: {exc}")
            checked += 1
    assert not refused, "\n".join(refused)
    assert checked >= 150


def test_every_corpus_write_and_command_is_refused_by_the_plan_alone(neo4j_driver: Any, neo4j_connection: Any) -> None:
    passed: list[str] = []
    refused = 0
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        for case in CORPUS:
            if case["label"] not in ("WRITE", "ADMIN"):
                continue
            try:
                summary = _explain(session, case)
            except Exception:  # noqa: S112 (Neo4j refuses to plan it at all: nothing to check)
                continue
            if summary.query_type == "r" and all(is_read_operator(op) for op in _operators(summary.plan)):
                continue  # a command Neo4j itself plans as a plain read: none in the corpus today
            try:
                check_plan(summary.plan, policy_for(case).tool(case["tool"]).procedures_allowed)
            except ExplainRejected:
                refused += 1
            else:
                passed.append(f"{case['id']} ({summary.query_type}): {case['query'][:100]}")
    assert not passed, "\n".join(passed)
    assert refused >= 80, refused


def test_the_merge_that_plans_a_locking_merge_is_refused(neo4j_driver: Any, neo4j_connection: Any) -> None:
    cypher = "MATCH (a), (b) MERGE (a)-[:CGW_NEVER]->(b) RETURN a"
    with neo4j_driver.session(database=neo4j_connection.database) as session:
        summary = session.run("EXPLAIN " + cypher).consume()
    assert "LockingMerge" in _operators(summary.plan), "the premise: Neo4j plans a LockingMerge here"
    try:
        check_plan(summary.plan, [])
    except ExplainRejected as exc:
        assert "LockingMerge" in str(exc)
    else:
        raise AssertionError("a plan with a LockingMerge passed the plan check")
