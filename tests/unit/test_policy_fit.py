"""The policy held against a graph's shapes (``gateway.policy_fit``): names that exist nowhere, near-misses,
``public`` where it opens more than its own label; and what the templates say after ``--scope-property``."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.cli.policy import render_policy
from gateway.cli.policy_init import render_template
from gateway.policy import POLICIES_DIR, Policy, load_policy
from gateway.policy_fit import (
    ONE_PARENT,
    PropertyRef,
    Shapes,
    graph_findings,
    near_miss,
    one_parent_warning,
    property_refs,
    read_shapes,
    static_findings,
    unchecked,
)

MENTIS_SHAPES = Shapes(
    labels={
        "Repository": frozenset({"uid", "slug", "apiToken"}),
        "Task": frozenset({"uid", "id", "title"}),
        "Attempt": frozenset(
            {"uid", "id", "action", "observation", "affectedFiles", "inference", "check", "createdAt", "embedding"}
        ),
        "Conclusion": frozenset(
            {
                "uid",
                "id",
                "inference",
                "check",
                "createdAt",
                "outdatedAt",
                "outdatedReason",
                "latestCommit",
                "embedding",
            }
        ),
    },
    types={"HAS_TASK": frozenset(), "HAS_ATTEMPT": frozenset(), "HAS_CONCLUSION": frozenset()},
)


def _mentis(scope_property: str = "slug", **changes: Any) -> Policy:
    """The Mentis template for a graph whose repositories are named by ``scope_property``, with ``changes``."""
    text = render_template("mentis", POLICIES_DIR / "mentis.yaml", scope_property)
    policy = Policy.model_validate(__import__("yaml").safe_load(text))
    raw = policy.model_dump(mode="json")
    if "hidden_properties" in changes:
        raw["visible_properties"] = None  # the deny-list form instead of the template's allow-list
    for dotted, value in changes.items():
        node = raw
        *path, last = dotted.split("__")
        for part in path:
            node = node[part]
        node[last] = value
    return Policy.model_validate(raw)


@pytest.mark.parametrize(
    ("key", "present", "expected"),
    [
        ("api_token", ["uid", "slug", "apiToken"], "apiToken"),
        ("apiToken", ["api_token", "uid"], "api_token"),
        ("API_TOKEN", ["apiToken"], "apiToken"),
        ("embeding", ["embedding", "id"], "embedding"),
        ("password", ["uid", "slug", "apiToken"], None),
    ],
)
def test_a_near_miss_is_found_whatever_the_case_and_separators(
    key: str, present: list[str], expected: str | None
) -> None:
    assert near_miss(key, present) == expected


def test_the_template_fits_its_own_shape() -> None:
    assert graph_findings(_mentis(), MENTIS_SHAPES) == [] and static_findings(_mentis()) == []
    policy = _mentis(hidden_properties={"Attempt": ["embedding"], "Conclusion": ["embedding"]})
    assert graph_findings(policy, MENTIS_SHAPES) == []
    assert static_findings(policy) == []


def test_a_misspelt_visible_property_is_named_with_the_key_the_graph_has() -> None:
    policy = _mentis(visible_properties__nodes__Task=["id", "Title"])
    (finding,) = graph_findings(policy, MENTIS_SHAPES)
    assert "visible_properties.nodes.Task names 'Title', which no Task carries" in finding.problem
    assert finding.fix == "write 'title' for 'Title' in visible_properties.nodes.Task"


def test_a_misspelt_hidden_property_fails_with_the_key_the_graph_has() -> None:
    policy = _mentis(hidden_properties={"Repository": ["api_token"]})
    (finding,) = graph_findings(policy, MENTIS_SHAPES)
    assert "hidden_properties.Repository names 'api_token', which no Repository carries" in finding.problem
    assert "'apiToken'" in finding.problem
    assert finding.fix == "write 'apiToken' for 'api_token' in hidden_properties.Repository"


def test_a_hidden_property_with_no_near_miss_lists_what_the_label_carries() -> None:
    (finding,) = graph_findings(_mentis(hidden_properties={"Task": ["password"]}), MENTIS_SHAPES)
    assert "'password', which no Task carries" in finding.problem
    assert "id, title, uid" in finding.fix


def test_a_hidden_property_of_a_label_that_exists_nowhere_is_named() -> None:
    (finding,) = graph_findings(_mentis(hidden_properties={"Repositry": ["apiToken"]}), MENTIS_SHAPES)
    assert "'Repositry' named in hidden_properties.Repositry occurs nowhere" in finding.problem
    assert "did you mean 'Repository'" in finding.problem


def test_a_rule_reading_a_misspelt_property_is_named_with_the_near_miss() -> None:
    # The allow-list shows the renamed key too: it is named as well.
    shown, rule, pin = graph_findings(_mentis("Slug"), MENTIS_SHAPES)
    assert "visible_properties.nodes.Repository names 'Slug'" in shown.problem and "'slug'" in shown.problem
    assert "scope.nodes.Repository names 'Slug'" in rule.problem and "carry 'slug'" in rule.problem
    assert "tools.recall.pins.Repository names 'Slug'" in pin.problem


def test_placeholder_relationship_types_that_do_not_apply_are_named_where_the_policy_names_them() -> None:
    policy = _mentis(scope__bookkeeping_relationship_types=["SUPERSEDES"])
    (finding,) = graph_findings(policy, MENTIS_SHAPES)
    assert "'SUPERSEDES' named in scope.bookkeeping_relationship_types occurs nowhere" in finding.problem
    assert "remove it from scope.bookkeeping_relationship_types" in finding.fix
    assert "layers_property" not in finding.fix


def test_public_on_a_label_others_derive_from_is_found_without_a_graph() -> None:
    policy = _mentis(scope__nodes__Task={"kind": "public"})
    (finding,) = static_findings(policy)
    assert "scope.nodes.Task is public, and Attempt, Conclusion derive their visibility from Task" in finding.problem
    assert any("public label" in line for line in unchecked(policy))


def test_public_on_a_label_carrying_the_scope_property_is_found_on_the_graph() -> None:
    shapes = MENTIS_SHAPES.model_copy(update={"labels": {**MENTIS_SHAPES.labels, "Mirror": frozenset({"slug"})}})
    policy = _mentis(scope__nodes__Mirror={"kind": "public"})
    (finding,) = graph_findings(policy, shapes)
    assert "scope.nodes.Mirror is public, but Mirror elements carry slug" in finding.problem


def test_the_property_names_are_one_list_of_owner_key_and_where() -> None:
    policy = _mentis(hidden_properties={"Attempt": ["embedding"], "Repository": ["apiToken"]})
    assert property_refs(policy) == [
        PropertyRef("Attempt", "embedding", "hidden_properties.Attempt"),
        PropertyRef("Repository", "apiToken", "hidden_properties.Repository"),
    ]
    # An owner-less name (a default list) is held against every element's keys.
    assert MENTIS_SHAPES.keys_of(None) is not None and "apiToken" in MENTIS_SHAPES.keys_of(None)  # type: ignore[operator]


def test_shapes_are_read_in_one_query() -> None:
    calls: list[str] = []

    def run(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        calls.append(cypher)
        return [["label", "Repository", ["slug", "uid"]], ["type", "HAS_TASK", []]]

    shapes = read_shapes(run)
    assert len(calls) == 1
    assert shapes.labels == {"Repository": frozenset({"slug", "uid"})} and shapes.types == {"HAS_TASK": frozenset()}


def test_the_mentis_template_names_no_mindreader_types() -> None:
    policy = load_policy(POLICIES_DIR / "mentis.yaml")
    assert policy.scope.bookkeeping_relationship_types == frozenset()
    assert all(not policy.tool(t).denied_relationship_types for t in ("recall", "analyze"))
    named = MENTIS_SHAPES.model_copy(
        update={"labels": {**MENTIS_SHAPES.labels, "Repository": frozenset({"name", "apiToken"})}}
    )
    assert graph_findings(policy, named) == []


def test_comments_and_show_follow_the_scope_property() -> None:
    text = render_template("mentis", POLICIES_DIR / "mentis.yaml", "slug")
    assert "its name" not in text and "its `slug` is one of the caller's" in text
    assert "a `slug`" in text and "CONTRADICTS" not in text and "SUPERSEDES" not in text
    shown = render_policy(_mentis())
    assert "its name" not in shown and "a Repository is visible when its slug is one of the caller's" in shown
    # The policy reads no layers list: show says nothing about one.
    assert "'layers'" not in shown and "layers property" not in shown
    assert "layers property 'layers'" in render_policy(load_policy(POLICIES_DIR / "mindreader.yaml"))


def test_nodes_a_derived_label_beside_another_named_label_hides_are_counted() -> None:
    mentis = load_policy(POLICIES_DIR / "mentis.yaml")
    asked: list[dict[str, Any]] = []

    def run(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        assert cypher == ONE_PARENT
        asked.append(params)
        return [[3]]

    warning = one_parent_warning(mentis, run)
    assert warning is not None and warning.startswith(
        "3 node(s) carry Attempt, Conclusion, Task beside another label the policy names and are hidden"
    )
    assert asked == [
        {"walking": ["Attempt", "Conclusion", "Task"], "named": ["Attempt", "Conclusion", "Repository", "Task"]}
    ]
    assert one_parent_warning(mentis, lambda cypher, params: [[0]]) is None
    # A policy without derived rules asks nothing.
    assert one_parent_warning(load_policy(POLICIES_DIR / "default.yaml"), lambda c, p: [[9]]) is None
