"""The scoped text stays within a few times the agent's under every shipped policy: one visibility
predicate per element, one predicate for the labels a rule is shared by, one EXISTS per derived
walk (bench/rewrite_plans.py measures the planning time the size costs)."""

from __future__ import annotations

import pytest

from bench.rewrite_plans import CALLER, REPRESENTATIVE, reading_the_representative_keys, rewritten
from gateway.guard import parse_query
from gateway.policy import POLICIES_DIR, Policy, VisibilityRule, load_policy
from gateway.scope.projection import DEPTH, ShownKeys, final_queries, wrapped
from gateway.scope.rules import ToolRules
from sandbox.wire import VisibleKeys

POLICIES = {
    path.stem: reading_the_representative_keys(load_policy(path)) for path in sorted(POLICIES_DIR.glob("*.yaml"))
}
# What a policy's rules add per element does not depend on the agent's text. The largest is
# mindreader's: its time-valid filters on Fact and ASSERTS (a node is held to every filter name it
# may carry as a label) and Fact's anchor walk, about 2,000 characters for a node whose labels the
# pattern does not state.
CONSTANT = 8_000
# Under hidden properties each final RETURN also gets the projection wrapper (gateway/scope/projection.py):
# one fixed text, plus its glue (two WITHs and the agent's column names).
# The allow-list's key test is the longer of the two forms.
WRAPPER = (
    max(
        len(wrapped("__gw_c", ShownKeys({"Label": ["key"]}), DEPTH)),
        len(wrapped("__gw_c", ShownKeys(visible=VisibleKeys(nodes={}, relationships={}, default=[])), DEPTH)),
    )
    + 300
)


def _wrapper_chars(text: str, policy: Policy) -> int:
    if not policy.hides_properties():
        return 0
    parsed = parse_query(text, policy.tool("analyze").limits, "5")
    return WRAPPER * sum(len(final_queries(statement.body)) for statement in parsed.statements)


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("query", sorted(REPRESENTATIVE))
def test_scoped_text_is_at_most_three_times_the_agents_plus_a_constant(policy: str, query: str) -> None:
    text = REPRESENTATIVE[query]
    scoped, _ = rewritten(text, POLICIES[policy])
    assert len(scoped) <= 3 * len(text) + CONSTANT + _wrapper_chars(text, POLICIES[policy]), (len(text), len(scoped))


def test_the_bound_is_measured_on_the_shipped_policies() -> None:
    assert {"default", "mentis", "mindreader"} <= POLICIES.keys()
    assert CALLER.attribute("repositories")


# mindreader's scoped length per representative query, measured (plus about 2%) with its
# time-valid text, which every element analyze reads carries, anchors included. Length is a
# proxy: Neo4j's planning time follows the function calls more than the characters
# (bench/rewrite_plans.py measures it).
MINDREADER = {
    "EXISTS in a WHERE": 3_200,
    "OPTIONAL MATCH and COUNT": 4_900,
    "one labelled node": 1_500,
    "one unlabelled node": 1_850,
    "pattern comprehension": 3_150,
    "shortestPath with condition": 5_150,
    "three hops, one unstated": 4_800,
    "two hops, labels stated": 3_000,
    "untyped relationship": 3_350,
    "variable length": 4_950,
}
# The time-valid text of one element named by a one-letter variable: five comparisons, no arithmetic.
TIME_VALID = 200


def test_every_representative_query_has_a_mindreader_bound() -> None:
    assert MINDREADER.keys() == REPRESENTATIVE.keys()


@pytest.mark.parametrize("query", sorted(REPRESENTATIVE))
def test_mindreader_scoped_text_stays_within_its_measured_length(query: str) -> None:
    scoped, _ = rewritten(REPRESENTATIVE[query], POLICIES["mindreader"])
    assert len(scoped) <= MINDREADER[query]


def test_the_time_valid_text_of_one_element_is_short() -> None:
    rules = ToolRules.of(POLICIES["mindreader"], "analyze")
    text = rules._rule("n", VisibilityRule(kind="time_valid"), 0)
    assert "n.validFrom" in text and "n.validTo" in text
    assert len(text) <= TIME_VALID, len(text)
