"""Visibility rules per label and type (docs/decisions/0018): the policy vocabulary, its
validation, the compiled text of each rule kind, the parameters, and layer 2's copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.domain import LayerSwitches, Principal
from gateway.policy import POLICIES_DIR, Policy, PolicyError, load_policy
from gateway.scope import plan
from gateway.scope.predicates import Predicates
from gateway.scope.rules import ToolRules
from sandbox.scope_check import confirm_derived, filter_rows
from sandbox.wire import ElementCondition, ElementRule, ScopeCheck
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH

RULES_POLICY = Path(__file__).resolve().parents[1] / "policies" / "rules.yaml"
POLICY = load_policy(RULES_POLICY)
MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")
NO_REWRITE = LayerSwitches(scope_rewrite=False)  # params and the result check do not depend on it
ALICE = Principal(name="alice", scope=frozenset({"team"}), attributes={"repositories": frozenset({"repo-a"})})


def _raw() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(RULES_POLICY.read_text(encoding="utf-8"))
    return raw


def _invalid(raw: dict[str, Any], tmp_path: Path) -> str:
    file = tmp_path / "p.yaml"
    file.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(file)
    return str(caught.value)


# ---- a policy that names no rules means what it meant ----------------------------------------


def test_the_default_rule_is_membership_on_the_layers_property_as_before() -> None:
    policy = load_policy(ALL_PROPERTIES_POLICY_PATH)
    old = Predicates("layers", "__gw_scope", ("CONTRADICTS", "SUPERSEDES"))
    new = Predicates("layers", "__gw_scope", ("CONTRADICTS", "SUPERSEDES"), rules=ToolRules.of(policy, "analyze"))
    assert new.node_visible("n", frozenset({"Fact"})) == old.node_visible("n") == old.visible("n")
    assert new.relationship_visible("r") == old.relationship_visible("r")
    assert plan("MATCH (n) RETURN n", policy, "analyze", ALICE, NO_REWRITE).params == {"__gw_scope": ["team"]}


# ---- compiled text per rule kind -----------------------------------------------------------


def test_equality_is_one_membership_test_against_the_attribute_parameter() -> None:
    text = ToolRules.of(POLICY, "analyze").node("n", frozenset({"Repository"}))
    # The attribute holds strings: a missing, list or number value is in it never, and never raises.
    assert "coalesce(n.name IN $__gw_attr_repositories, false)" in text
    # The stated label needs no label test; the default rule does not apply to a named label.
    assert "NOT n:Repository" not in text and "n.layers] WHERE" not in text.split("NOT n:Fact")[0]


def test_an_extra_label_at_run_time_is_held_to_its_rule_too() -> None:
    text = ToolRules.of(POLICY, "analyze").node("n", frozenset({"Catalog"}))
    # Catalog is public, but a node that is also Bookkeeping (denied) or a Repository is not waved through.
    assert "NOT n:Bookkeeping" in text
    assert "(NOT n:Repository OR coalesce(n.name IN" in text
    # A derived label beside another named one hides the node: a label test, not a walk.
    assert "NOT n:Task" in text and "EXISTS" not in text


def test_a_node_with_no_named_label_follows_the_default_rule() -> None:
    text = ToolRules.of(POLICY, "analyze").node("n")
    # Bookkeeping (denied) hides a node whatever else it carries: it exempts nothing.
    assert text.startswith("(((n:Attempt OR n:Catalog OR n:Fact OR n:Repository OR n:Task) OR any(")
    assert " AND NOT n:Bookkeeping AND " in text
    assert "$__gw_scope" in text


def test_public_and_denied() -> None:
    rules = ToolRules.of(POLICY, "analyze")
    assert rules.relationship("r", frozenset({"HAS_TASK"})) == "true"
    assert rules.node("n", frozenset({"Bookkeeping"})) == "false"


def test_derived_is_an_exists_over_the_declared_path_with_the_anchor_held_to_its_own_rule() -> None:
    text = ToolRules.of(POLICY, "analyze").node("n", frozenset({"Attempt"}))
    assert text.startswith(
        "(NOT n:Bookkeeping AND NOT n:Catalog AND NOT n:Fact AND NOT n:Repository AND NOT n:Task AND EXISTS "
        "{ MATCH (n)<-[:HAS_ATTEMPT]-(__gw_a0:Task) WHERE "
    )
    # The Task anchor is itself derived: the same EXISTS walks on to its Repository's equality
    # rule, in a MATCH of its own (no relationship uniqueness across the hops, as nested EXISTS).
    walk = text.split("EXISTS {")[1]
    assert " MATCH (__gw_a0)<-[:HAS_TASK]-(__gw_a1:Repository) WHERE " in walk
    assert "coalesce(__gw_a1.name IN $__gw_attr_repositories, false)" in walk
    assert text.count("EXISTS {") == text.count("MATCH (n)") == 1  # the stated label's walk only
    # An anchor carrying a derived label its path does not state is hidden, never recursed into;
    # the Task anchor carries no other named label (five label tests, written as the shorter one).
    assert "WHERE none(__gw_k IN labels(__gw_a0) WHERE __gw_k IN ['Attempt', 'Bookkeeping', 'Catalog', " in text
    assert "NOT __gw_a1:Task" in text


def test_a_node_with_two_derived_labels_is_hidden_whatever_the_pattern_states() -> None:
    rules = ToolRules.of(POLICY, "analyze")
    # A stated derived label: every other derived label is a plain label test, never a second walk.
    assert "NOT n:Task AND EXISTS" in rules.node("n", frozenset({"Attempt"}))
    # Nothing stated: one walk per derived label it may carry, and at most one of them carried.
    unstated = rules.node("n")
    assert (
        "(size([__gw_k IN labels(n) WHERE __gw_k IN ['Attempt', 'Catalog', 'Fact', 'Repository', 'Task']]) <= 1 "
        "OR NOT n:Attempt AND NOT n:Task)"
    ) in unstated
    assert unstated.count("EXISTS {") == 2


def test_a_stated_label_that_is_not_derived_writes_no_walk() -> None:
    # Under mentis a Repository could also carry Task, Attempt or Conclusion at run time; such a
    # node is hidden, so the text tests the labels and walks nowhere.
    text = ToolRules.of(MENTIS, "analyze").node("r", frozenset({"Repository"}))
    assert "EXISTS" not in text
    assert text == (
        "(NOT r:Attempt AND NOT r:Conclusion AND NOT r:Task AND coalesce(r.name IN $__gw_attr_repositories, false))"
    )


def test_an_unlabelled_node_walks_once_per_derived_label_and_carries_no_other_named_label() -> None:
    text = ToolRules.of(MENTIS, "analyze").node("t")
    assert text.count("EXISTS {") == 3  # Task, Attempt, Conclusion: each guarded by its label test
    assert "(NOT t:Task OR EXISTS { MATCH (t)<-[:HAS_TASK]-(__gw_a0:Repository)" in text
    # One named label at most: the only label that is not derived is Repository, so two named
    # labels always include a derived one.
    assert "size([__gw_k IN labels(t) WHERE __gw_k IN ['Attempt', 'Conclusion', 'Repository', 'Task']]) <= 1" in text
    # With several labels that are not derived, two of them together are still visible.
    rules = ToolRules.of(POLICY, "analyze").node("n")
    assert "(size([__gw_k IN labels(n) WHERE __gw_k IN " in rules
    assert "]]) <= 1 OR NOT n:Attempt AND NOT n:Task)" in rules


def test_an_anchor_tests_the_other_named_labels_and_holds_no_second_rule() -> None:
    text = ToolRules.of(MENTIS, "analyze").node("a", frozenset({"Attempt"}))
    walk = text.split("EXISTS {")[1]
    # The Task anchor: no (NOT __gw_a0:Repository OR <equality>), a plain label test.
    assert (
        "MATCH (a)<-[:HAS_ATTEMPT]-(__gw_a0:Task) WHERE NOT __gw_a0:Attempt AND NOT __gw_a0:Conclusion "
        "AND NOT __gw_a0:Repository MATCH"
    ) in walk
    assert "__gw_a0.name" not in walk and "__gw_a1.name IN $__gw_attr_repositories" in walk
    assert text.count("EXISTS {") == 1


def test_an_expression_is_bound_to_a_name_before_label_tests_and_patterns() -> None:
    text = ToolRules.of(POLICY, "analyze").node("startNode(r)")
    assert text.startswith("any(__gw_e0 IN [startNode(r)] WHERE ")
    assert "MATCH (__gw_e0)<-[:HAS_ATTEMPT]-" in text


def test_relationships_by_type_with_the_default_for_the_rest() -> None:
    rules = ToolRules.of(POLICY, "analyze")
    text = rules.relationship("r")
    assert text.startswith("CASE type(r) WHEN 'HAS_ATTEMPT' THEN true WHEN 'HAS_TASK' THEN true WHEN 'USES' THEN true ")
    assert "ELSE any(__gw_v IN [r.layers]" in text
    # Stated alternatives: one of them, nothing else.
    both = rules.relationship("r", frozenset({"HAS_TASK", "LINKS"}))
    assert both.startswith("CASE type(r) WHEN 'HAS_TASK' THEN true WHEN 'LINKS' THEN any(") and both.endswith(
        "ELSE false END"
    )
    predicates = Predicates("layers", "__gw_scope", ("SUPERSEDES",), rules=rules)
    assert predicates.relationship_visible("r", frozenset({"HAS_TASK"})) == "(true)"
    assert predicates.relationship_visible("r").endswith("AND NOT type(r) IN ['SUPERSEDES']")


def test_filters_apply_per_tool() -> None:
    analyze = ToolRules.of(POLICY, "analyze").node("n", frozenset({"Fact"}))
    recall = ToolRules.of(POLICY, "recall").node("n", frozenset({"Fact"}))
    assert "n.validTo IS NULL" in analyze
    assert "validTo" not in recall


def test_pins_bind_the_labels_property_to_the_request_parameter_under_that_tool_only() -> None:
    recall = ToolRules.of(POLICY, "recall").node("n", frozenset({"Attempt"}))
    assert "coalesce(__gw_a0.id = $taskId, false)" in recall
    assert "coalesce(__gw_a1.name = $repository, false)" in recall
    assert "$repository" not in ToolRules.of(POLICY, "analyze").node("n", frozenset({"Attempt"}))


def test_every_attribute_the_rules_read_is_a_reserved_parameter_from_the_principal() -> None:
    scoped = plan("MATCH (n:Repository) RETURN n", POLICY, "analyze", ALICE, NO_REWRITE)
    assert scoped.params == {"__gw_attr_repositories": ["repo-a"], "__gw_scope": ["team"]}
    nobody = plan("MATCH (n) RETURN n", POLICY, "analyze", Principal(name="nobody"), NO_REWRITE)
    assert nobody.params == {"__gw_attr_repositories": [], "__gw_scope": []}


def test_the_whole_path_helpers_go_through_the_rules() -> None:
    predicates = Predicates("layers", "__gw_scope", (), rules=ToolRules.of(POLICY, "analyze"))
    assert "NOT __gw_x:Bookkeeping" in predicates.visible_path("p")
    assert "any(__gw_e0 IN [startNode(r)]" in predicates.visible_relationship_with_endpoints("r")
    assert "NOT __gw_x:Bookkeeping" in predicates.visible_nodes("ns")
    assert "any(__gw_e0 IN [startNode(__gw_e)]" in predicates.visible_relationships("rs")


# ---- the policy refuses rules it could not hold ------------------------------------------


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("(x)<-[:HAS_TASK*1..2]-(anchor:Repository)", "fixed length"),
        ("(x)<-[:HAS_TASK]-(t)<-[:OWNS]-(anchor:Repository)", "names only x and anchor, not 't'"),
        ("(x)<-[:HAS_TASK]-(anchor)", "exactly one label"),
        ("(x)<-[:HAS_TASK]-(anchor:Project)", "anchor label 'Project' has no rule in scope.nodes"),
        ("(x)<-[:HAS_TASK]-(anchor:Attempt)", "derived rules form a cycle: Attempt -> Task -> Attempt"),
        ("(x)<-[:HAS_TASK]-(anchor:Task)", "derived rules form a cycle: Attempt -> Task -> Task"),
        ("()-[x]->(anchor:Repository)", "as the node x"),
        ("not a pattern", "not one Cypher path pattern"),
    ],
)
def test_a_derived_path_that_cannot_be_held_is_refused_naming_the_problem(
    tmp_path: Path, path: str, problem: str
) -> None:
    raw = _raw()
    raw["scope"]["nodes"]["Task"] = {"kind": "derived", "path": path}
    message = _invalid(raw, tmp_path)
    assert "scope" in message and problem in message


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"Repository": {"kind": "equality", "property": "name"}}, "an equality rule names its attribute"),
        ({"Catalog": {"kind": "public", "property": "x"}}, "a public rule takes no property"),
        ({"Fact": {"kind": "membership", "attribute": "has space"}}, "must be an identifier"),
        ({"Fact": {"kind": "sometimes"}}, "Fact.kind"),
    ],
)
def test_rule_fields_must_fit_the_kind(tmp_path: Path, change: dict[str, Any], problem: str) -> None:
    raw = _raw()
    raw["scope"]["nodes"].update(change)
    assert problem in _invalid(raw, tmp_path)


def test_filters_say_one_condition(tmp_path: Path) -> None:
    raw = _raw()
    raw["scope"]["filters"]["Fact"] = [{"property": "validTo", "absent": True, "equals": "x"}]
    assert "exactly one of `absent: true` or `equals: <string>`" in _invalid(raw, tmp_path)


def test_a_pin_binds_only_a_required_parameter(tmp_path: Path) -> None:
    raw = _raw()
    raw["tools"]["analyze"]["pins"] = {"Repository": {"property": "name", "parameter": "repository"}}
    message = _invalid(raw, tmp_path)
    assert "pins.Repository: parameter 'repository' is not one of required_parameters" in message


def test_the_default_rule_cannot_be_derived(tmp_path: Path) -> None:
    raw = _raw()
    raw["scope"]["default"] = {"kind": "derived", "path": "(x)--(anchor:Repository)"}
    assert "scope.default cannot be derived" in _invalid(raw, tmp_path)


def test_an_attribute_parameter_must_be_reserved(tmp_path: Path) -> None:
    raw = _raw()
    raw["reserved_parameters"] = {"keys": ["__gw_scope"], "prefixes": []}
    assert "'__gw_attr_repositories' must be reserved" in _invalid(raw, tmp_path)


def test_unknown_keys_are_refused(tmp_path: Path) -> None:
    raw = _raw()
    raw["scope"]["nodes"]["Repository"]["when"] = "always"
    assert "when" in _invalid(raw, tmp_path)


# ---- layer 2 holds the same rules --------------------------------------------------------


def _node(token: str, labels: list[str], **properties: Any) -> dict[str, Any]:
    return {"$type": "node", "elementId": token, "labels": labels, "properties": properties}


def _rel(token: str, rel_type: str, **properties: Any) -> dict[str, Any]:
    return {"$type": "relationship", "elementId": token, "type": rel_type, "startElementId": "n1",
            "endElementId": "n2", "properties": properties}  # fmt: skip


def _check(tool: str = "analyze", principal: Principal = ALICE) -> ScopeCheck:
    result_check = plan("MATCH (n) RETURN n", POLICY, tool, principal, NO_REWRITE).result_check  # type: ignore[arg-type]
    assert result_check is not None
    return result_check


def _kept(rows: list[list[Any]], check: ScopeCheck, **kw: Any) -> list[list[Any]]:
    return filter_rows(["v"], rows, check, **kw)[0]


def test_layer2_gets_the_rules_with_the_callers_values() -> None:
    check = _check("recall")
    assert check.nodes["Repository"] == ElementRule(kind="equality", property="name", values=["repo-a"])
    assert check.default == ElementRule(kind="membership", property="layers", values=["team"])
    assert check.nodes["Task"].kind == "derived" and check.derived_nodes is not None
    assert "UNWIND $__gw_ids AS __gw_id MATCH (__gw_x) WHERE elementId(__gw_x) = __gw_id AND" in check.derived_nodes
    assert ElementCondition(property="name", parameter="repository") in check.conditions["Repository"]
    assert "Fact" not in check.conditions  # the validTo filter is analyze's
    assert _check("analyze").conditions["Fact"] == [ElementCondition(property="validTo", absent=True)]


@pytest.mark.parametrize(
    ("element", "visible"),
    [
        (_node("n1", ["Repository"], name="repo-a"), True),
        (_node("n1", ["Repository"], name="repo-b"), False),
        (_node("n1", ["Repository"], name=["repo-a"]), False),  # equality wants a string
        (_node("n1", ["Repository"]), False),  # missing
        (_node("n1", ["Catalog"]), True),  # public, no property needed
        (_node("n1", ["Catalog", "Bookkeeping"]), False),  # an extra denied label never widens
        (_node("n1", ["Catalog", "Repository"], name="repo-b"), False),
        (_node("n1", ["Other"], layers=[]), True),  # default membership
        (_node("n1", ["Other"]), False),
        (_node("n1", ["Fact"], layers=["team"]), True),
        (_node("n1", ["Fact"], layers=["team"], validTo="2020"), False),  # analyze's filter
        (_rel("r1", "HAS_TASK"), True),
        (_rel("r1", "OTHER", layers=["elsewhere"]), False),
        (_rel("r1", "SUPERSEDES", layers=[]), False),  # hidden bookkeeping type
    ],
)
def test_layer2_membership_equality_public_denied_and_filters(element: dict[str, Any], visible: bool) -> None:
    assert _kept([[element]], _check()) == ([[element]] if visible else [])


def test_layer2_pins_compare_with_the_jobs_parameter() -> None:
    check = _check("recall")
    repo = _node("n1", ["Repository"], name="repo-a")
    assert _kept([[repo]], check, params={"repository": "repo-a", "taskId": "t1"}) == [[repo]]
    assert _kept([[repo]], check, params={"repository": "repo-b", "taskId": "t1"}) == []
    assert _kept([[repo]], check, params={}) == []


def test_layer2_derived_elements_are_hidden_unless_neo4j_confirms_them() -> None:
    check = _check()
    rows = [[_node("n1", ["Attempt"])], [_node("n2", ["Attempt"])], [_node("n3", ["Catalog"])]]
    asked: list[tuple[str, dict[str, Any]]] = []

    def ask(text: str, params: dict[str, Any]) -> list[str]:
        asked.append((text, params))
        return ["4:db:2"]  # Neo4j says only the second attempt is visible

    ids = {"n1": "4:db:1", "n2": "4:db:2", "n3": "4:db:3"}
    confirmed = confirm_derived(rows, check, ids, {"__gw_scope": ["team"]}, ask)
    assert confirmed == frozenset({"n2"})
    # Only the derived elements' ids are asked about, with the job's parameters.
    assert asked == [(check.derived_nodes, {"__gw_scope": ["team"], "__gw_ids": ["4:db:1", "4:db:2"]})]
    assert _kept(rows, check, confirmed=confirmed) == [rows[1], rows[2]]
    assert _kept(rows, check) == [rows[2]]  # nothing confirmed: every derived element hidden


def test_layer2_hides_a_derived_label_beside_another_named_label_without_asking_neo4j() -> None:
    def ask(text: str, params: dict[str, Any]) -> list[str]:
        raise AssertionError("asked")

    check = _check()
    # Each label's own rule could hold (a visible repository name, a walk Neo4j might confirm).
    both = _node("n1", ["Repository", "Task"], name="repo-a")
    public_too = _node("n2", ["Attempt", "Catalog"])
    rows = [[both], [public_too]]
    confirmed = confirm_derived(rows, check, {"n1": "4:db:1", "n2": "4:db:2"}, {}, ask)
    assert confirmed == frozenset()
    assert _kept(rows, check, confirmed=frozenset({"n1", "n2"})) == []


def test_a_result_without_derived_elements_asks_nothing() -> None:
    def ask(text: str, params: dict[str, Any]) -> list[str]:
        raise AssertionError("asked")

    assert confirm_derived([[_node("n1", ["Catalog"])]], _check(), {"n1": "4:db:1"}, {}, ask) == frozenset()


def test_layer2_without_rules_reads_like_before() -> None:
    check = ScopeCheck(layers_property="layers", layers=["a"])
    fact = _node("n1", ["Anything"], layers=["a"])
    assert _kept([[fact]], check) == [[fact]]
    assert _kept([[_node("n1", ["Anything"], layers=["b"])]], check) == []


def test_the_rules_policy_is_a_valid_policy() -> None:
    assert isinstance(POLICY, Policy)
    assert POLICY.scope_attributes() == ["layers", "repositories"]


# ---- the reviewer's view ---------------------------------------------------------------------


def test_policy_show_says_every_rule_as_a_sentence() -> None:
    from gateway.cli.policy import render_policy, rule_sentences

    sentences = rule_sentences(POLICY)
    assert (
        "an Attempt is visible when its Task's Repository's name is one of the caller's repositories "
        "(path (x)<-[:HAS_ATTEMPT]-(anchor:Task))"
    ) in sentences
    assert "a Repository is visible when its name is one of the caller's repositories" in sentences
    assert "a Catalog is visible to every caller" in sentences
    assert "a Bookkeeping is never visible" in sentences
    assert "a relationship of type HAS_TASK is visible to every caller" in sentences
    assert "under analyze, a Fact is visible only when it has no validTo" in sentences
    assert (
        "under recall, a Task is visible only when its id equals the request's $taskId "
        "(and so is anything derived from it)"
    ) in sentences
    assert (
        "a node labelled Attempt or Task (visible through its one parent) that carries any other named label "
        "is hidden, whatever each rule says"
    ) in sentences
    assert "scope: an Attempt is visible when" in render_policy(POLICY)
    default = rule_sentences(load_policy(ALL_PROPERTIES_POLICY_PATH))
    assert default == [
        "an element of a label or type not named below is visible when its layers is an empty list or shares an "
        "entry with the caller's layers"
    ]


def test_policy_lint_refuses_a_cycle_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from gateway.cli.policy import EXIT_INVALID_POLICY, _handle_lint

    raw = _raw()
    raw["scope"]["nodes"]["Repository"] = {"kind": "derived", "path": "(x)-[:OWNS]->(anchor:Attempt)"}
    file = tmp_path / "cycle.yaml"
    file.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert _handle_lint(argparse.Namespace(file=str(file))) == EXIT_INVALID_POLICY
    assert "derived rules form a cycle" in capsys.readouterr().out


def test_labels_ruled_like_the_default_share_its_one_predicate() -> None:
    mindreader = ToolRules.of(
        load_policy(Path(__file__).resolve().parents[2] / "policies" / "mindreader.yaml"), "analyze"
    )
    # Fact's all_of holds the default's membership: shared too, its anchor walk written apart.
    for labels in (frozenset(), frozenset({"Entity"}), frozenset({"Fact"}), frozenset({"Unnamed"})):
        text = mindreader.node("n", labels)
        assert text.count("n.layers") == 1, text
    assert "EXISTS { MATCH (n)-[:ABOUT]->(__gw_a0:Entity)" in mindreader.node("n", frozenset({"Fact"}))
    # Its filters still hold for a Fact, stated or not.
    assert "CASE WHEN (n.validFrom <= " in mindreader.node("n", frozenset({"Fact"}))
    # Nothing named stated: the one walk holds only for a Fact that carries no other named label.
    unstated = mindreader.node("n")
    assert "(NOT n:Fact OR (EXISTS { MATCH (n)-[:ABOUT]->(__gw_a0:Entity)" in unstated
    assert (
        "(size([__gw_k IN labels(n) WHERE __gw_k IN ['Class', 'Entity', 'Episode', 'Fact', 'Property']]) <= 1 "
        "OR NOT n:Fact)"
    ) in unstated
    # A stated Entity cannot also be a Fact: a label test, no walk.
    entity = mindreader.node("n", frozenset({"Entity"}))
    assert "NOT n:Fact" in entity and "EXISTS" not in entity


def test_a_label_ruled_otherwise_does_not_exempt_a_node_from_the_shared_rule() -> None:
    raw: dict[str, Any] = yaml.safe_load(RULES_POLICY.read_text(encoding="utf-8"))
    raw["scope"]["nodes"]["Fact"] = dict(raw["scope"]["default"])
    rules = ToolRules.of(Policy.model_validate(raw), "analyze")
    # A Catalog (public) that is also a Fact (ruled like the default) still needs the default rule.
    assert "(NOT n:Fact OR any(__gw_v IN [n.layers]" in rules.node("n", frozenset({"Catalog"}))
    unstated = rules.node("n")
    assert unstated.startswith("((((n:Attempt OR n:Catalog OR n:Repository OR n:Task) AND NOT n:Fact) OR any(")
