"""The projection wrapper applies under either form of the policy's choice, with that form's rule."""

from __future__ import annotations

from gateway import scope
from gateway.domain import Principal
from gateway.guard import parse_query
from gateway.policy import POLICIES_DIR, load_policy
from gateway.scope.projection import DEFAULT_PARAMETER, HIDE_PARAMETER, KEEP_PARAMETER, ShownKeys
from sandbox.rebuild import TAG_PARAMETER
from sandbox.wire import VisibleKeys

MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")
PAYMENTS = Principal(name="payments", attributes={"repositories": frozenset({"acme/payments"})})


def test_the_shipped_allow_list_wraps_the_answer_with_its_own_lists() -> None:
    parsed = parse_query("MATCH (a:Attempt) RETURN a", MENTIS.tool("analyze").limits, "5")
    plan = scope.plan(parsed, MENTIS, "analyze", PAYMENTS)
    assert TAG_PARAMETER in plan.params and "__gw_row" in plan.cypher
    assert MENTIS.visible_properties is not None
    assert plan.params["__gw_show_nodes"]["Attempt"] == sorted(MENTIS.visible_properties.nodes["Attempt"])
    assert plan.params[DEFAULT_PARAMETER] == [] and HIDE_PARAMETER not in plan.params


def test_the_allow_list_condition_reads_the_listed_labels_and_the_kept_keys() -> None:
    shown = ShownKeys(keep=["Layers"], visible=VisibleKeys(nodes={"A": ["x"]}, relationships={"R": ["y"]}))
    assert shown.active()
    node, rel = shown.condition("k", "labels(n)", "node"), shown.condition("k", "[type(r)]", "relationship")
    assert "$__gw_show_nodes" in node and "$__gw_show_rels" in rel and f"${DEFAULT_PARAMETER}" in node
    assert f"toLower(k) IN ${KEEP_PARAMETER}" in node
    assert shown.parameters()[KEEP_PARAMETER] == ["layers"]


def test_a_policy_hiding_nothing_is_not_wrapped() -> None:
    assert not ShownKeys().active() and not ShownKeys({"A": []}).active()
