"""The projection wrapper applies under either form of the policy's choice, with that form's rule."""

from __future__ import annotations

import pytest

from gateway import scope
from gateway.domain import Principal
from gateway.guard import parse_query
from gateway.policy import POLICIES_DIR, load_policy
from gateway.scope.projection import HIDE_PARAMETER, KEEP_PARAMETER, ShownKeys
from gateway.scope.visible_props import DEFAULT_PARAMETER
from sandbox.rebuild import TAG_PARAMETER, TooDeep, rebuild, rebuild_typed
from sandbox.wire import VisibleKeys

MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")
PAYMENTS = Principal(name="payments", attributes={"repositories": frozenset({"acme/payments"})})


def test_the_shipped_allow_list_wraps_the_answer_with_its_own_lists() -> None:
    parsed = parse_query("MATCH (a:Attempt) RETURN [a] AS xs", MENTIS.tool("analyze").limits, "5")
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


def _wrapped(query: str) -> str:
    parsed = parse_query(query, MENTIS.tool("analyze").limits, "5")
    return scope.plan(parsed, MENTIS, "analyze", PAYMENTS).cypher


@pytest.mark.parametrize(
    ("query", "columns"),
    [
        ("MATCH (a:Attempt) UNWIND [a] AS b RETURN *", "WITH a, b WITH [a, b, 0, ''] AS __gw_row"),
        ("MATCH (a:Attempt) WITH a, [a] AS z RETURN DISTINCT *, a.id AS i", "WITH DISTINCT a, z, "),
        ("MATCH (a:Attempt) WITH [a] AS z RETURN *, z", "WITH  z WITH [z, 0, ''] AS __gw_row"),
        ("MATCH (a:Attempt) WITH [a] AS a RETURN * UNION MATCH (a:Task) WITH [a] AS a RETURN *", "UNION MATCH"),
    ],
)
def test_a_final_return_star_is_spelt_out_and_wrapped(query: str, columns: str) -> None:
    out = _wrapped(query)
    assert columns in out and "RETURN *" not in out and "DISTINCT *" not in out, out
    assert out.count("AS __gw_row RETURN __gw_row[0]") == query.count("*")  # one wrapper per final RETURN


def test_a_with_star_stays() -> None:
    out = _wrapped("MATCH (a:Attempt) WITH * RETURN [a] AS xs")
    assert "WITH * WITH [a] AS xs WITH [xs, 0, ''] AS __gw_row" in out, out


def test_the_marker_past_the_wrappers_levels_refuses_on_both_transports() -> None:
    tag = "t" * 32
    with pytest.raises(TooDeep):
        rebuild({"__gw": tag, "c": "list", "i": [[None, {"__gw": tag, "deep": True}]]}, tag)
    marker = {"__gw": {"$type": "String", "_value": tag}, "deep": {"$type": "Boolean", "_value": True}}
    typed = {"$type": "Map", "_value": marker}
    with pytest.raises(TooDeep):
        rebuild_typed(typed, tag)
    # A map the agent built is never taken for the marker: only the job's own tag is.
    assert rebuild({"__gw": "other", "deep": True}, tag) == {"__gw": "other", "deep": True}
