"""A derived walk the agent's own pattern takes to a node checked beside it is not written again."""

from __future__ import annotations

import pytest

from gateway import guard, scope
from gateway.domain import Principal
from gateway.policy import POLICIES_DIR, Policy, load_policy
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")
PAYMENTS = Principal(name="payments", attributes={"repositories": frozenset({"acme/payments"})})
ATTEMPT_WALK = "<-[:HAS_ATTEMPT]-(__gw_a0:Task)"


def _chain_policy() -> Policy:
    """Attempt derived over two hops at once, as bench/scale-rules.yaml writes it."""
    base = load_policy(ALL_PROPERTIES_POLICY_PATH)
    nodes = {
        "Repository": {"kind": "equality", "property": "name", "attribute": "repositories"},
        "Task": {"kind": "derived", "path": "(x)<-[:HAS_TASK]-(anchor:Repository)"},
        "Attempt": {"kind": "derived", "path": "(x)<-[:HAS_ATTEMPT]-(:Task)<-[:HAS_TASK]-(anchor:Repository)"},
    }
    data = base.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["scope"]["nodes"] = nodes
    return Policy.model_validate(data)


def rewritten(query: str, policy: Policy = MENTIS) -> str:
    decision = guard.check(query, {}, "analyze", policy)
    assert decision.parsed is not None, decision
    return scope.plan(decision.parsed, policy, "analyze", PAYMENTS).cypher


def test_a_pattern_that_takes_the_walk_writes_it_once() -> None:
    out = rewritten("MATCH (t:Task)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id")
    assert out.count("EXISTS {") == 1 and "(t)<-[:HAS_TASK]-" in out  # the task's own walk only
    assert f"(a){ATTEMPT_WALK}" not in out, out


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (t:Task)<-[:HAS_ATTEMPT]-(a:Attempt) RETURN a.id",  # the other direction
        "MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id",  # the anchor's label not stated
        "MATCH (t:Task)-[:HAS_CONCLUSION]->(a:Attempt) RETURN a.id",  # another type
        "MATCH (t:Task)-[:HAS_ATTEMPT|HAS_CONCLUSION]->(a:Attempt) RETURN a.id",  # one of two types
        "MATCH (t:Task)-[:HAS_ATTEMPT*1..1]->(a:Attempt) RETURN a.id",  # a variable-length hop
        "MATCH (t) MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id",  # bound earlier, no label stated
        "MATCH (t:Task) WITH t AS u MATCH (u)<-[:HAS_ATTEMPT]-(a:Attempt) RETURN a.id",  # the wrong way
        "MATCH (t:Task), (a:Attempt) RETURN a.id",  # no hop at all
    ],
)
def test_a_pattern_that_does_not_take_the_walk_keeps_it(query: str) -> None:
    assert f"(a){ATTEMPT_WALK}" in rewritten(query)


def test_a_condition_on_the_walked_node_waits_for_the_anchor_too() -> None:
    out = rewritten("MATCH (t:Task)-[:HAS_ATTEMPT]->(a:Attempt) WHERE 1 / size(a.action) = 1 RETURN a.id")
    guarded = out.split("CASE WHEN ", 1)[1].split(" THEN ", 1)[0]
    assert "(t)<-[:HAS_TASK]-" in guarded, out  # a is visible only with t: the condition waits for both


def test_a_chain_of_hops_proves_a_walk_over_two_hops() -> None:
    out = rewritten(
        "MATCH (r:Repository)-[:HAS_TASK]->(t:Task)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id", _chain_policy()
    )
    assert "EXISTS { MATCH (t)" not in out and "EXISTS { MATCH (a)" not in out, out


def test_a_node_part_of_the_way_whose_own_rule_walks_the_rest_proves_the_walk() -> None:
    # The attempt's walk is HAS_ATTEMPT to a Task, then the Task's own walk: a visible t has taken it.
    out = rewritten("MATCH (t:Task)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id", _chain_policy())
    assert "EXISTS { MATCH (a)" not in out and "EXISTS { MATCH (t)" in out, out
    out = rewritten("MATCH (t:Task) MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id", _chain_policy())
    assert out.count("EXISTS { MATCH") == 1 and "EXISTS { MATCH (t)" in out, out  # t checked by its MATCH
    # A condition on the attempt waits for the task's walk.
    out = rewritten(
        "MATCH (t:Task)-[:HAS_ATTEMPT]->(a:Attempt) WHERE 1 / size(a.action) = 1 RETURN a.id", _chain_policy()
    )
    assert "(t)<-[:HAS_TASK]-" in out.split("CASE WHEN ", 1)[1].split(" THEN ", 1)[0], out


@pytest.mark.parametrize(
    ("task_path", "query"),
    [
        # The rest of the attempt's walk is not the task's own rule (another type).
        ("(x)<-[:OWNS]-(anchor:Repository)", "MATCH (t:Task)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id"),
        # The task's label is not stated where the pattern reaches it.
        ("(x)<-[:HAS_TASK]-(anchor:Repository)", "MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id"),
    ],
)
def test_a_node_part_of_the_way_proves_nothing_unless_its_own_rule_is_the_rest(task_path: str, query: str) -> None:
    policy = _chain_policy()
    data = policy.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["scope"]["nodes"]["Task"]["path"] = task_path
    out = rewritten(query, Policy.model_validate(data))
    assert "EXISTS { MATCH (a)<-[:HAS_ATTEMPT]-" in out, out


def test_a_node_whose_label_is_not_stated_leaves_out_the_walks_its_pattern_takes_only() -> None:
    out = rewritten("MATCH (r:Repository)-[:HAS_TASK]->(t) RETURN r.name")
    own = out.split(" AND ((", 1)[1] if " AND ((" in out else out
    assert "EXISTS { MATCH (t)<-[:HAS_TASK]-" not in out, out  # were t a Task, r proves its walk
    assert "EXISTS { MATCH (t)<-[:HAS_ATTEMPT]-" in own and "EXISTS { MATCH (t)<-[:HAS_CONCLUSION]-" in own


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (t:Task) MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id",
        "MATCH (t:Task) WITH t OPTIONAL MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id",
        "MATCH (t:Task) WITH t AS u MATCH (u)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id",
        "MATCH (t) MATCH (t:Task)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id",  # the label stated here
        "MATCH (t:Task) RETURN [(t)-[:HAS_ATTEMPT]->(a:Attempt) | a.id] AS ids",
        "MATCH (t:Task) RETURN COUNT { (t)-[:HAS_ATTEMPT]->(a:Attempt) } AS n",
    ],
)
def test_an_anchor_bound_and_checked_before_proves_the_walk(query: str) -> None:
    out = rewritten(query)
    assert f"(a){ATTEMPT_WALK}" not in out, out


def test_a_name_rebound_by_unwind_or_an_expression_proves_nothing() -> None:
    out = rewritten("MATCH (t:Task) WITH collect(t)[0] AS t MATCH (t)-[:HAS_ATTEMPT]->(a:Attempt) RETURN a.id")
    assert f"(a){ATTEMPT_WALK}" in out, out
