"""scope.plan: the whole scope layer for one request, decided in one place."""

from __future__ import annotations

import pytest

from gateway import guard, scope
from gateway.cypher import ParsedQuery
from gateway.domain import LayerSwitches, Principal
from gateway.errors import Neo4jRefused
from gateway.policy import Policy, load_policy
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

POLICY = load_policy(ALL_PROPERTIES_POLICY_PATH)
BOB = Principal(name="bob", scope=frozenset({"project-b", "project-a"}))
QUERY = "MATCH (a:Fact)-[r]->(b) RETURN b.id AS id"


def parsed(cypher: str = QUERY) -> ParsedQuery:
    decision = guard.check(cypher, {}, "analyze", POLICY)
    assert decision.parsed is not None, decision.reason
    return decision.parsed


def _allowing_bookkeeping(policy: Policy) -> Policy:
    return policy.model_copy(
        update={"scope": policy.scope.model_copy(update={"allow_bookkeeping": {"recall": False, "analyze": True}})}
    )


def test_hidden_relationship_types_are_the_denied_and_the_bookkeeping_ones() -> None:
    assert POLICY.hidden_relationship_types("analyze") == {"SUPERSEDES", "CONTRADICTS"}
    tools = {
        n: t.model_copy(update={"denied_relationship_types": frozenset({"AUDIT"})}) for n, t in POLICY.tools.items()
    }
    custom = POLICY.model_copy(update={"tools": tools})
    assert custom.hidden_relationship_types("analyze") == {"AUDIT", "SUPERSEDES", "CONTRADICTS"}
    assert _allowing_bookkeeping(custom).hidden_relationship_types("analyze") == {"AUDIT"}
    assert _allowing_bookkeeping(custom).hidden_relationship_types("recall") == {"AUDIT", "SUPERSEDES", "CONTRADICTS"}


def test_a_plan_holds_the_rewrite_the_parameter_the_result_check_and_the_error_policy() -> None:
    plan = scope.plan(parsed(), POLICY, "analyze", BOB)
    assert plan.cypher.startswith("MATCH (a:Fact)-[r]->(b) WHERE (any(__gw_v IN [a.layers] ")
    assert plan.params == {POLICY.scope.scope_parameter: ["project-a", "project-b"]}
    assert plan.result_check is not None
    assert plan.result_check.layers == ["project-a", "project-b"]
    assert plan.result_check.layers_property == POLICY.scope.layers_property
    assert plan.withhold_error_details is True
    assert plan.withhold_data_notifications is True


def test_both_layers_hide_the_same_relationship_types() -> None:
    tools = {
        n: t.model_copy(update={"denied_relationship_types": frozenset({"AUDIT"})}) for n, t in POLICY.tools.items()
    }
    custom = POLICY.model_copy(update={"tools": tools})
    plan = scope.plan(parsed(), custom, "analyze", BOB)
    hidden = sorted(custom.hidden_relationship_types("analyze"))
    assert plan.result_check is not None and plan.result_check.hidden_relationship_types == hidden
    assert f"NOT type(r) IN [{', '.join(repr(t) for t in hidden)}]" in plan.cypher


@pytest.mark.parametrize(
    ("layers", "rewritten", "checked"),
    [(LayerSwitches(), True, True), (LayerSwitches(scope_rewrite=False), False, True),
     (LayerSwitches(result_check=False), True, False)],
)  # fmt: skip
def test_each_scope_layer_can_be_switched_off_alone(layers: LayerSwitches, rewritten: bool, checked: bool) -> None:
    plan = scope.plan(parsed(), POLICY, "analyze", BOB, layers)
    assert (plan.cypher != QUERY) is rewritten
    assert (plan.result_check is not None) is checked
    assert plan.withhold_error_details is rewritten
    assert plan.withhold_data_notifications is rewritten
    assert plan.params == {POLICY.scope.scope_parameter: ["project-a", "project-b"]}


def test_an_unparsed_query_passes_only_with_the_rewrite_off() -> None:
    assert scope.plan(QUERY, POLICY, "analyze", BOB, LayerSwitches(scope_rewrite=False)).cypher == QUERY
    with pytest.raises(TypeError):
        scope.plan(QUERY, POLICY, "analyze", BOB)


def test_withheld_details_keep_only_neo4js_code() -> None:
    refused = scope.withheld_details(Neo4jRefused('Text cannot be parsed to a Date "secret"', "Neo.X"))
    assert "secret" not in refused.message and "Neo.X" in refused.message and refused.neo4j_code == "Neo.X"
