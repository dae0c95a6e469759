"""The guard, scope and sandbox rules for the Cypher 25 reads and the Cypher 5 families, each with what it stops."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import guard, scope
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.policy import Policy, load_policy
from gateway.runner import job_for
from sandbox.explain import ExplainRejected, check_operators_read_only
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
ANYONE = Principal(name="cypher-rules")


def decide(query: str, params: dict[str, Any] | None = None, policy: Policy = POLICY) -> tuple[str | None, str]:
    decision = guard.check(query, params or {}, "analyze", policy)
    return decision.rule, decision.reason or ""


def rewritten(query: str, params: dict[str, Any] | None = None) -> str:
    decision = guard.check(query, params or {}, "analyze", POLICY)
    assert decision.allowed and decision.parsed is not None, decision.reason
    return scope.plan(decision.parsed, POLICY, "analyze", ANYONE).cypher


# ---------------------------------------------------------------- versions and options


def test_the_policy_lists_the_versions_and_options_it_accepts() -> None:
    assert decide("CYPHER 25 MATCH (n) RETURN n")[0] is None
    assert decide("CYPHER runtime=slotted planner=dp MATCH (n) RETURN n")[0] is None
    only_five = POLICY.model_copy(update={"cypher": POLICY.cypher.model_copy(update={"versions": frozenset({"5"})})})
    rule, reason = decide("CYPHER 25 MATCH (n) RETURN n", policy=only_five)
    assert rule == "query.option" and "CYPHER 25" in reason
    rule, _ = decide("CYPHER 4 MATCH (n) RETURN n")
    assert rule == "query.option"


@pytest.mark.parametrize(
    "option",
    [
        "debug=tostring",  # prints internals
        "replan=force",
        "expressionEngine=compiled",
        "runtime=nonexistent",
        "inferSchemaParts=off",
    ],
)
def test_query_options_off_the_allow_list_are_refused_by_name(option: str) -> None:
    rule, reason = decide(f"CYPHER {option} MATCH (n) RETURN n")
    assert rule == "query.option" and option in reason


def test_cypher_25_the_gateway_does_not_read_is_refused_by_its_own_rule() -> None:
    rule, reason = decide("CYPHER 25 MATCH (m:Movie) SEARCH m IN (VECTOR INDEX i FOR $v LIMIT 5) RETURN m", {"v": [1]})
    assert rule == "cypher25.unsupported" and "SEARCH" in reason


@pytest.mark.parametrize(
    "attack",
    [
        "CYPHER 25 MATCH (n) RETURN n NEXT CREATE (m:Pwned)",
        "CYPHER 25 WHEN true THEN CREATE (:Pwned) ELSE CREATE (:Pwned)",
        "CYPHER 25 FOR x IN [1] CREATE (:Pwned)",
        "CYPHER 25 MATCH (n) LET x = 1 SET n.pwned = x",
        "CYPHER 25 MATCH (n) CALL (n) { WHEN true THEN SET n.pwned = 1 } RETURN n",
        "CYPHER 25 MATCH (n) FILTER n.x = 1 REMOVE n:$($l)",
    ],
)
def test_cypher_25_writes_are_refused_wherever_they_hide(attack: str) -> None:
    assert decide(attack, {"l": "A"})[0] == "write.clause"


# ---------------------------------------------------------------- dynamic labels and the deny-lists


def test_a_dynamic_type_is_checked_against_the_deny_list_through_its_parameter() -> None:
    assert decide("MATCH ()-[r:$($t)]->() RETURN r", {"t": "KNOWS"})[0] is None
    rule, reason = decide("MATCH ()-[r:$($t)]->() RETURN r", {"t": "SUPERSEDES"})
    assert rule == "relationship.denied" and "SUPERSEDES" in reason
    assert decide("MATCH ()-[r:$any($ts)]->() RETURN r", {"ts": ["KNOWS", "CONTRADICTS"]})[0] == "relationship.denied"
    assert decide("MATCH ()-[r:$(['KNOWS', 'SUPERSEDES'])]->() RETURN r")[0] == "relationship.denied"


def test_a_dynamic_type_computed_at_run_time_is_refused_while_there_is_a_deny_list() -> None:
    rule, reason = decide("MATCH (a) MATCH ()-[r:$(a.kind)]->() RETURN r")
    assert rule == "relationship.denied" and "computed at run time" in reason
    rule, _ = decide("CYPHER 25 MATCH (a), (b) WHERE b:$(a.kind) RETURN b")
    assert rule == "relationship.denied"  # a label check in an expression may test a relationship type too


def test_a_dynamic_node_label_is_checked_against_the_denied_labels() -> None:
    strict = POLICY.model_copy(
        update={
            "tools": {
                **POLICY.tools,
                "analyze": POLICY.tool("analyze").model_copy(update={"denied_labels": frozenset({"Secret"})}),
            }
        }
    )
    assert decide("MATCH (n:$($l)) RETURN n", {"l": "Secret"}, strict)[0] == "label.denied"
    assert decide("MATCH (n:$($l)) RETURN n", {"l": "Public"}, strict)[0] is None


# ---------------------------------------------------------------- scope


def test_a_gql_selector_gets_the_predicate_inside_its_parenthesised_pattern() -> None:
    out = rewritten("MATCH p = ANY SHORTEST (a:A)-[:R]-{1,4}(b:B) RETURN p")
    assert out.startswith("MATCH p = ANY SHORTEST (__gw_p1 = (a:A)-[:R]-{1,4}(b:B) WHERE (all(__gw_x IN nodes(__gw_p1)")
    # and the MATCH-level predicate stays
    assert out.count("nodes(p)") == 1


def test_a_named_group_after_a_selector_gets_the_predicate_in_its_own_where() -> None:
    out = rewritten("MATCH ALL SHORTEST (q = (a)-[:R]-{1,4}(b) WHERE length(q) > 1) RETURN q")
    # The agent's condition names q: it waits for the whole path, then the path predicate follows.
    assert "WHERE CASE WHEN (all(__gw_x IN nodes(q)" in out and "THEN (length(q) > 1) ELSE false END AND (all(" in out
    assert "(__gw_p" not in out.split("ALL SHORTEST", 1)[1].split(")", 1)[0]


def test_selectors_inside_exists_are_scoped_too() -> None:
    out = rewritten("MATCH (a) WHERE EXISTS { SHORTEST 1 (a)-[:R]-{1,3}(b:B) } RETURN a")
    assert "SHORTEST 1 (__gw_p" in out


def test_a_dynamic_label_computed_from_an_element_in_a_pattern_is_refused() -> None:
    decision = guard.check("MATCH (a)-->(b:$(a.kind)) RETURN b", {}, "analyze", POLICY.model_copy(
        update={"tools": {**POLICY.tools, "analyze": POLICY.tool("analyze").model_copy(
            update={"denied_relationship_types": frozenset()})}}
    ))  # fmt: skip
    assert decision.parsed is not None
    with pytest.raises(QueryRejected) as info:
        scope.plan(decision.parsed, POLICY, "analyze", ANYONE)
    assert info.value.rule == "scope.unsupported" and "dynamic label" in info.value.reason


def test_cypher_25_bodies_are_scoped_in_every_segment_and_branch() -> None:
    out = rewritten("CYPHER 25 MATCH (n:A) RETURN n NEXT MATCH (n)-[:R]->(m) RETURN m")
    assert "[n.layers]" in out.split(" NEXT ")[0] and "[m.layers]" in out.split(" NEXT ")[1]
    assert "[__gw_r1.layers]" in out  # the relationship of the second segment, named and checked
    out = rewritten("CYPHER 25 WHEN $x > 1 THEN MATCH (n:A) RETURN n AS r ELSE MATCH (m:B) RETURN m AS r", {"x": 1})
    assert "[n.layers]" in out and "[m.layers]" in out


def test_a_dynamic_label_check_is_not_a_condition_that_cannot_raise() -> None:
    out = rewritten("CYPHER 25 MATCH (n)-->(m) WHERE m:$($l) RETURN n", {"l": "A"})
    assert "CASE WHEN" in out.split("WHERE", 1)[1]


# ---------------------------------------------------------------- the runner and the sandbox


def test_the_job_runs_under_the_version_the_guard_read() -> None:
    tool = POLICY.tool("analyze")
    job = job_for(tool, query_id="q", cypher="MATCH (n) RETURN n", params={}, result_check=None, cypher_version="25")
    assert job.cypher == "CYPHER 25 MATCH (n) RETURN n"
    job = job_for(tool, query_id="q", cypher="MATCH (n) RETURN n", params={}, result_check=None)
    assert job.cypher == "MATCH (n) RETURN n"


def _op(name: str, *children: dict[str, Any]) -> dict[str, Any]:
    return {"operatorType": name, "children": list(children)}


def test_the_explain_check_accepts_the_empty_result_of_finish_only() -> None:
    check_operators_read_only(_op("ProduceResults@neo4j", _op("EmptyResult@neo4j", _op("AllNodesScan@neo4j"))))
    with pytest.raises(ExplainRejected, match="Create"):
        check_operators_read_only(_op("ProduceResults", _op("EmptyResult", _op("Create", _op("Argument")))))
    with pytest.raises(ExplainRejected, match="EmptyResult"):
        check_operators_read_only(_op("ProduceResults", _op("Apply", _op("EmptyResult", _op("Argument")))))
