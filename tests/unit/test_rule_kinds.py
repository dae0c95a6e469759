"""The rule kinds are one table: every name of the wire's ``RuleKind`` has a gateway spec and a
sandbox check, and each spec is complete; composition and time-valid, the kinds built on it, hold
their meaning in the policy, the rewrite's text, the sandbox's three-valued check and the
reviewer's sentences."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway import rule_kinds
from gateway.cli.policy import rule_sentences
from gateway.domain import LayerSwitches, Principal
from gateway.policy import Policy, PolicyError, VisibilityRule, load_policy
from gateway.rule_kinds.base import TRUE
from gateway.scope import plan
from gateway.scope.rules import ToolRules
from sandbox import rule_checks, wire
from sandbox.scope_check import confirm_derived, derived_candidates, filter_rows
from sandbox.wire import ElementCondition, ElementRule, ScopeCheck
from sandbox.withhold import read_by_the_check

RULES_POLICY = Path(__file__).resolve().parents[1] / "policies" / "rules.yaml"
NOW = "2026-06-01T12:00:00.000000+00:00"
ALICE = Principal(name="alice", scope=frozenset({"team"}), attributes={"repositories": frozenset({"repo-a"})})


def _policy(nodes: dict[str, Any], filters: dict[str, Any] | None = None, tmp_path: Path | None = None) -> Policy:
    raw: dict[str, Any] = yaml.safe_load(RULES_POLICY.read_text(encoding="utf-8"))
    raw["scope"]["nodes"].update(nodes)
    raw["scope"]["filters"] = filters or {}
    return Policy.model_validate(raw)


def _refused(nodes: dict[str, Any], filters: dict[str, Any] | None = None) -> str:
    with pytest.raises(ValueError) as caught:
        _policy(nodes, filters)
    return str(caught.value)


# ---- one table ---------------------------------------------------------------------------------


def test_every_wire_kind_has_a_gateway_spec_and_a_sandbox_check_and_nothing_else_does() -> None:
    names = set(typing.get_args(wire.RuleKind))
    assert set(rule_kinds.KINDS) == names
    assert set(rule_checks.CHECKS) == names
    assert all(name == spec.name for name, spec in rule_kinds.KINDS.items())


class _Words:
    def rule_property(self, rule: VisibilityRule) -> str:
        return rule.property or "layers"

    def holds(self, rule: VisibilityRule, subject: str) -> str:
        return rule_kinds.spec(rule).sentence(rule, subject, self)

    def anchor_rule(self, label: str) -> VisibilityRule:
        return VisibilityRule(kind="membership")


# One valid rule of each kind, as a policy would write it.
EXAMPLES: dict[str, dict[str, Any]] = {
    "membership": {"kind": "membership"},
    "equality": {"kind": "equality", "property": "name", "attribute": "repositories"},
    "derived": {"kind": "derived", "path": "(x)<-[:HAS_TASK]-(anchor:Repository)"},
    "public": {"kind": "public"},
    "denied": {"kind": "denied"},
    "all_of": {"kind": "all_of", "rules": [{"kind": "membership"}, {"kind": "time_valid"}]},
    "any_of": {"kind": "any_of", "rules": [{"kind": "membership"}, {"kind": "public"}]},
    "time_valid": {"kind": "time_valid", "from_property": "since", "to_property": "until"},
}


@pytest.mark.parametrize("name", sorted(rule_kinds.KINDS))
def test_every_spec_has_fields_a_text_a_wire_form_a_sentence_and_a_check(name: str) -> None:
    spec = rule_kinds.KINDS[name]  # type: ignore[index]
    assert spec.required <= spec.fields
    assert spec.label
    rule = VisibilityRule.model_validate(EXAMPLES[name])
    text = ToolRules.of(_policy({"Example": EXAMPLES[name]}), "analyze").node("n", frozenset({"Example"}))
    assert text
    sentence = spec.sentence(rule, "its", _Words())
    assert sentence and "None" not in sentence
    assert spec.wire(rule, _WireFor(ALICE)).kind == name
    for field in sorted(spec.fields - spec.required):
        assert getattr(VisibilityRule.model_validate({"kind": name, **_without(EXAMPLES[name], field)}), field) is None


def _without(example: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in example.items() if k not in ("kind", field)}


class _WireFor:
    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    def rule_property(self, rule: VisibilityRule) -> str:
        return rule.property or "layers"

    def values(self, attribute: str) -> list[str]:
        return sorted(self.principal.attribute(attribute))

    def wire(self, rule: VisibilityRule) -> ElementRule:
        return rule_kinds.spec(rule).wire(rule, self)


@pytest.mark.parametrize("name", sorted(rule_kinds.KINDS))
def test_a_field_the_kind_does_not_take_is_refused(name: str) -> None:
    spec = rule_kinds.KINDS[name]  # type: ignore[index]
    other = sorted({"property", "path", "from_property"} - spec.fields)[0]
    with pytest.raises(ValueError, match="takes no"):
        VisibilityRule.model_validate({**EXAMPLES[name], other: "validTo" if other != "path" else "(x)"})


# ---- composition -------------------------------------------------------------------------------


def test_composition_needs_two_rules_and_a_bounded_depth() -> None:
    assert "at least two rules" in _refused({"Fact": {"kind": "all_of", "rules": [{"kind": "membership"}]}})
    deep: dict[str, Any] = {"kind": "membership"}
    for _ in range(4):
        deep = {"kind": "any_of", "rules": [deep, {"kind": "public"}]}
    assert "nest at most" in _refused({"Fact": deep})


def test_a_derived_rule_inside_a_composition_is_checked_and_cannot_close_a_cycle() -> None:
    bad_path = {"kind": "all_of", "rules": [{"kind": "membership"}, {"kind": "derived", "path": "(x)-->(y)"}]}
    assert "derived path" in _refused({"Fact": bad_path})
    loop = {
        "Repository": {
            "kind": "any_of",
            "rules": [{"kind": "public"}, {"kind": "derived", "path": "(x)-[:OF]->(anchor:Task)"}],
        }
    }
    assert "cycle" in _refused(loop)
    default_walks = {"kind": "all_of", "rules": [{"kind": "membership"}, EXAMPLES["derived"]]}
    raw: dict[str, Any] = yaml.safe_load(RULES_POLICY.read_text(encoding="utf-8"))
    raw["scope"]["default"] = default_walks
    with pytest.raises(ValueError, match="default cannot be derived"):
        Policy.model_validate(raw)


def test_all_of_and_any_of_are_written_as_and_and_or_of_their_rules() -> None:
    policy = _policy({"Note": EXAMPLES["all_of"], "Tag": {"kind": "any_of", "rules": [
        {"kind": "membership"}, {"kind": "equality", "property": "owner", "attribute": "repositories"}]}})  # fmt: skip
    rules = ToolRules.of(policy, "analyze")
    note = rules.node("n", frozenset({"Note"}))
    assert "n.layers] WHERE" in note and " AND CASE WHEN (n.validFrom <= " in note
    tag = rules.node("n", frozenset({"Tag"}))
    assert " OR coalesce(n.owner IN $__gw_attr_repositories, false)" in tag
    # A composition holding public is public (any_of) or its other rules (all_of): no dead text.
    open_any = _policy({"Open": EXAMPLES["any_of"]})
    assert ToolRules.of(open_any, "analyze").label_condition("n", "Open") == TRUE


def _check(rule: ElementRule, properties: dict[str, Any]) -> bool | None:
    scope = ScopeCheck(layers_property="layers", layers=["team"], now=NOW)
    from sandbox.scope_check import _Rules

    return _Rules(scope, frozenset()).rule(rule, properties)


MEMBER = ElementRule(kind="membership", property="layers", values=["team"])
WALK = ElementRule(kind="derived")


@pytest.mark.parametrize(
    ("kind", "layers", "expected"),
    [
        ("all_of", ["team"], None),  # membership holds, the walk is Neo4j's to decide
        ("all_of", ["other"], False),  # one false: false, whatever the walk says
        ("any_of", ["team"], True),  # one true: true
        ("any_of", ["other"], None),  # the walk may still make it true
    ],
)
def test_the_sandbox_decides_composition_with_three_values(kind: str, layers: list[str], expected: bool | None) -> None:
    rule = ElementRule(kind=kind, rules=[MEMBER, WALK])  # type: ignore[arg-type]
    assert _check(rule, {"layers": layers}) is expected
    assert _check(ElementRule(kind=kind, rules=[MEMBER, MEMBER]), {"layers": layers}) is (layers == ["team"])  # type: ignore[arg-type]


def test_an_element_whose_composed_rule_needs_a_walk_is_confirmed_by_neo4j_or_hidden() -> None:
    scope = ScopeCheck(
        layers_property="layers", layers=["team"], nodes={"Fact": ElementRule(kind="all_of", rules=[MEMBER, WALK])}
    )
    fact = {"$type": "node", "elementId": "f1", "labels": ["Fact"], "properties": {"layers": ["team"]}}
    other = {"$type": "node", "elementId": "f2", "labels": ["Fact"], "properties": {"layers": ["other"]}}
    rows = [[fact], [other]]
    assert derived_candidates(rows, scope) == ({"f1"}, set())  # f2 is hidden without asking
    assert filter_rows(["f"], rows, scope) == ([], 2)
    assert filter_rows(["f"], rows, scope, frozenset({"f1"})) == ([[fact]], 1)


def test_the_confirmation_query_holds_the_whole_composed_rule() -> None:
    # The only walk of this policy is inside Fact's composition.
    composed = {"kind": "all_of", "rules": [{"kind": "membership"}, EXAMPLES["derived"]]}
    policy = _policy({"Task": {"kind": "public"}, "Attempt": {"kind": "public"}, "Fact": composed})
    check = plan("MATCH (n) RETURN n", policy, "analyze", ALICE, LayerSwitches(scope_rewrite=False)).result_check
    assert check is not None and check.derived_nodes is not None
    # Fact's membership is the default's, written once for every node that shares it (a Fact
    # never escapes it: `... AND NOT __gw_x:Fact) OR <membership>`); its walk is its own.
    assert "AND NOT __gw_x:Fact) OR any(__gw_v IN [__gw_x.layers] WHERE" in check.derived_nodes
    # The walk holds only for a Fact that carries no other named label.
    assert "(NOT __gw_x:Fact OR EXISTS { MATCH (__gw_x)<-[:HAS_TASK]-(__gw_a0:Repository)" in check.derived_nodes
    assert "]]) <= 1 OR NOT __gw_x:Fact)" in check.derived_nodes


# ---- time-valid --------------------------------------------------------------------------------


def _at(iso: str, kind: str = "datetime") -> dict[str, Any]:
    return {"$type": kind, "iso": iso}


TIME = ElementRule(kind="time_valid", from_property="validFrom", to_property="validTo")


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({"validFrom": _at("2026-01-01T00:00:00Z")}, True),  # no `to`: still valid
        ({"validFrom": _at("2026-06-01T12:00:00.000000000+00:00")}, True),  # from == now
        ({"validFrom": _at("2026-06-01T12:00:00.000000001+00:00")}, False),  # a nanosecond later
        ({"validFrom": _at("2026-06-01T14:00:00.000000000+02:00")}, True),  # the same instant, elsewhere
        ({"validFrom": _at("2026-01-01T00:00:00Z"), "validTo": _at("2026-06-01T12:00:00Z")}, False),  # to == now
        ({"validFrom": _at("2026-01-01T00:00:00Z"), "validTo": _at("2026-06-01T12:00:00.000001Z")}, True),
        ({"validFrom": _at("2026-06-01", "date")}, True),  # a date: its midnight UTC
        ({"validFrom": _at("2026-06-02", "date")}, False),
        ({"validFrom": _at("2026-01-01", "date"), "validTo": _at("2026-06-01", "date")}, False),
        ({}, False),  # no `from`: hidden
        ({"validFrom": "2026-01-01T00:00:00Z"}, False),  # a string is not compared
        ({"validFrom": _at("2026-01-01T00:00:00", "localdatetime")}, False),  # no zone: not an instant
        ({"validFrom": 20260101}, False),
        ({"validFrom": _at("2026-01-01T00:00:00Z"), "validTo": "2027-01-01"}, False),  # an unreadable `to`
    ],
)
def test_the_sandbox_compares_zoned_datetimes_and_dates_with_the_requests_instant(
    properties: dict[str, Any], expected: bool
) -> None:
    assert _check(TIME, properties) is expected


def test_without_an_instant_the_time_valid_check_hides() -> None:
    from sandbox.scope_check import _Rules

    scope = ScopeCheck(layers_property="layers", layers=[])
    assert _Rules(scope, frozenset()).rule(TIME, {"validFrom": _at("2020-01-01T00:00:00Z")}) is False


def test_one_instant_per_request_reaches_the_rewrite_and_the_sandbox() -> None:
    policy = _policy({}, {"Fact": [{"rule": {"kind": "time_valid"}, "tools": ["analyze"]}]})
    planned = plan("MATCH (n) RETURN n", policy, "analyze", ALICE, LayerSwitches(scope_rewrite=False))
    assert planned.result_check is not None
    # The rewrite reads the sandbox's instant at +18:00 and its UTC date: the same instant.
    assert planned.result_check.now is not None
    assert rule_checks.now_instant(planned.params["__gw_now"]) == rule_checks.now_instant(planned.result_check.now)
    assert planned.params["__gw_today"] == planned.result_check.now[:10]
    assert planned.result_check.conditions["Fact"] == [ElementCondition(rule=TIME)]
    # A tool whose rules never compare with time gets no instant.
    assert (
        "__gw_now" not in plan("MATCH (n) RETURN n", policy, "recall", ALICE, LayerSwitches(scope_rewrite=False)).params
    )


def test_a_filter_names_a_property_or_a_rule_and_its_rule_reads_the_element_alone() -> None:
    both = {"Fact": [{"rule": {"kind": "time_valid"}, "property": "validTo", "absent": True}]}
    assert "names no property" in _refused({}, both)
    walk = {"Fact": [{"rule": EXAMPLES["derived"]}]}
    assert "reads the element alone" in _refused({}, walk)


def test_the_reviewer_reads_every_new_kind_in_sentences() -> None:
    policy = _policy(
        {"Note": {"kind": "all_of", "rules": [{"kind": "membership"}, EXAMPLES["derived"]]}, "Tag": EXAMPLES["any_of"]},
        {"Fact": [{"rule": {"kind": "time_valid"}, "tools": ["analyze"]}]},
    )
    text = "\n".join(rule_sentences(policy))
    assert (
        "a Note is visible when (its layers is an empty list or shares an entry with the caller's layers and its "
        "Repository's name is one of the caller's repositories)"
    ) in text
    assert (
        "a Tag is visible when (its layers is an empty list or shares an entry with the caller's layers or it exists)"
        in text
    )
    assert (
        "under analyze, a Fact is visible only when its validFrom is at or before the request's time and its "
        "validTo is absent or after it"
    ) in text


def test_the_rule_kinds_load_from_a_file(tmp_path: Path) -> None:
    raw: dict[str, Any] = yaml.safe_load(RULES_POLICY.read_text(encoding="utf-8"))
    raw["scope"]["nodes"]["Fact"] = {"kind": "all_of", "rules": [{"kind": "sometimes"}, {"kind": "public"}]}
    file = tmp_path / "p.yaml"
    file.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(PolicyError, match="kind"):
        load_policy(file)


def test_a_pinned_element_under_a_walk_is_a_candidate_when_its_pin_holds() -> None:
    # The pin compares with the job's parameter: without the parameters nothing pinned is ever asked about.
    scope = ScopeCheck(
        layers_property="layers", layers=["team"], nodes={"Task": WALK},
        conditions={"Task": [ElementCondition(property="id", parameter="taskId")]}, derived_nodes="the walk",
    )  # fmt: skip
    task = {"$type": "node", "elementId": "t1", "labels": ["Task"], "properties": {"id": "T-1"}}
    other = {"$type": "node", "elementId": "t2", "labels": ["Task"], "properties": {"id": "T-2"}}
    rows = [[task], [other]]
    assert derived_candidates(rows, scope, {"taskId": "T-1"}) == ({"t1"}, set())
    assert derived_candidates(rows, scope) == (set(), set())

    def ask(query: str, params: dict[str, object]) -> list[str]:
        return ["e1", "e2"]  # Neo4j says both walks hold; the pin still decides

    assert confirm_derived(rows, scope, {"t1": "e1", "t2": "e2"}, {"taskId": "T-1"}, ask) == frozenset({"t1"})


def test_the_keys_a_composed_or_timed_rule_reads_are_kept_for_the_check() -> None:
    timed = ElementRule(kind="time_valid", from_property="since", to_property="until")
    edge = ElementRule(kind="time_valid", from_property="a", to_property="b")
    scope = ScopeCheck(
        layers_property="layers", layers=["team"],
        nodes={"Fact": ElementRule(kind="all_of", rules=[ElementRule(kind="equality", property="owner"), timed])},
        conditions={"Edge": [ElementCondition(rule=edge)]},
    )  # fmt: skip
    assert set(read_by_the_check(scope)) == {"layers", "owner", "since", "until", "a", "b"}


# One rule of each kind, over the properties ``a``, ``b``, ``c``; composed rules hold two kinds each.
_EVERY_KIND = {
    "membership": ElementRule(kind="membership", property="a", values=["team"]),
    "equality": ElementRule(kind="equality", property="a", values=["x"]),
    "derived": ElementRule(kind="derived"),
    "public": ElementRule(kind="public"),
    "denied": ElementRule(kind="denied"),
    "all_of": ElementRule(
        kind="all_of",
        rules=[
            ElementRule(kind="equality", property="a", values=["x"]),
            ElementRule(kind="time_valid", from_property="b", to_property="c"),
        ],
    ),
    "any_of": ElementRule(
        kind="any_of",
        rules=[
            ElementRule(kind="equality", property="a", values=["x"]),
            ElementRule(kind="membership", property="b", values=["team"]),
        ],
    ),
    "time_valid": ElementRule(kind="time_valid", from_property="b", to_property="c"),
}
_SOON = {"$type": "datetime", "iso": "2026-06-02T00:00:00Z"}
_BEFORE = {"$type": "datetime", "iso": "2026-05-01T00:00:00Z"}
_PROPERTY_SETS: list[dict[str, Any]] = [
    {"a": "x", "b": _BEFORE, "c": _SOON},
    {"a": ["team"], "b": ["team"], "c": None},
    {"a": "y", "b": _SOON},
    {"a": [], "b": _BEFORE},
    {},
]


class _Ctx:
    untagged: wire.Untagged = "hidden"
    now = rule_checks.now_instant(NOW)

    def allowed(self, rule: ElementRule) -> frozenset[str]:
        return frozenset(rule.values)


@pytest.mark.parametrize("kind", sorted(_EVERY_KIND))
def test_a_kind_s_check_reads_only_the_properties_it_declares(kind: str) -> None:
    # The result check keeps the declared keys under hidden properties: a verdict reading an
    # undeclared key would see it withheld and judge wrongly (so every kind is in this table).
    rule = _EVERY_KIND[kind]
    declared = set(rule_checks.reads(rule))
    verdicts = set()
    for properties in _PROPERTY_SETS:
        verdict = rule_checks.check(rule, properties, _Ctx())
        verdicts.add(verdict)
        assert rule_checks.check(rule, {k: v for k, v in properties.items() if k in declared}, _Ctx()) == verdict
    if declared:  # what it declares it does read: some value set changes its verdict
        assert len(verdicts) > 1


def test_every_kind_is_in_the_reads_table() -> None:
    assert set(_EVERY_KIND) == set(typing.get_args(wire.RuleKind))


def test_the_rewrite_reads_the_instant_at_the_largest_offset_and_its_utc_date() -> None:
    # Half a microsecond before midnight UTC: +18:00 is already the next day; the date is not.
    assert rule_kinds.now_parameters("2026-05-31T23:59:59.999999+00:00") == {
        "__gw_now": "2026-06-01T17:59:59.999999+18:00",
        "__gw_today": "2026-05-31",
    }
    assert rule_checks.now_instant("2026-06-01T17:59:59.999999+18:00") == rule_checks.now_instant(
        "2026-05-31T23:59:59.999999+00:00"
    )


@pytest.mark.parametrize("name", ["__gw_now", "__gw_today"])
def test_a_time_valid_rule_needs_both_instant_parameters_reserved(name: str) -> None:
    raw: dict[str, Any] = yaml.safe_load(RULES_POLICY.read_text(encoding="utf-8"))
    raw["scope"]["filters"] = {"Fact": [{"rule": {"kind": "time_valid"}, "tools": ["analyze"]}]}
    other = "__gw_today" if name == "__gw_now" else "__gw_now"
    prefixes = [p for p in raw["reserved_parameters"].get("prefixes", []) if p != "__gw"]
    scope_keys = [raw["scope"].get("scope_parameter", "__gw_scope")]
    raw["reserved_parameters"] = {"keys": [other, *scope_keys], "prefixes": [*prefixes, "__gw_attr"]}
    with pytest.raises(ValueError, match=name):
        Policy.model_validate(raw)
