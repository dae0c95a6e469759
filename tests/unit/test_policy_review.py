"""``policy explain`` / ``policy matrix`` without a graph: principals and elements as written on the
command line, and the matrix's terminal table and HTML page (parsed: a reviewer attaches the file)."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest

from gateway.ops.policy_review import (
    ElementRef,
    ReviewError,
    explain,
    matrix,
    matrix_html,
    parse_principal,
    render_explanation,
    render_matrix,
)
from gateway.policy import POLICIES_DIR, load_policy
from gateway.scope_survey import Run

MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")


def test_a_principal_is_a_name_and_its_attribute_lists() -> None:
    p = parse_principal("ci:repositories=acme/api,acme/web; layers=team-a")
    assert p.name == "ci" and p.scope == {"team-a"} and p.attributes == {"repositories": {"acme/api", "acme/web"}}
    assert parse_principal("nobody").attributes == {}
    for bad in (":repositories=a", "ci:repositories", "ci:a=1;a=2", "ci:__gw_x=1"):
        with pytest.raises(ReviewError):
            parse_principal(bad)


def test_an_element_is_label_key_and_value() -> None:
    assert ElementRef.parse("Repository:uid=repo-a=b") == ElementRef(owner="Repository", key="uid", value="repo-a=b")
    with pytest.raises(ReviewError):
        ElementRef.parse("Repository=uid")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        if tag in ("td", "th"):
            self._in_cell, self.cells = True, [*self.cells, ""]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.cells[-1] += data


def _fake_graph(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
    """Two repositories, one the caller's; the predicate text is the rewrite's, the counts this fake's."""
    sees = params["__gw_attr_repositories"] == ["acme/api"]
    if cypher.startswith("MATCH (x) "):
        assert "__gw_attr_repositories" in cypher  # the equality rule's parameter, as the rewrite writes it
        shape = [["Repository", "<script>x</script>"], ["slug", "apiToken", "uid"]]
        return [["label", "Repository", 2, 1 if sees else 0, [shape] if sees else []]]
    return [["type", "HAS_TASK", 2, 0, []]]


def test_the_matrix_counts_per_principal_and_lists_what_an_answer_shows() -> None:
    # The deny-list form: the template's allow-list set aside.
    policy = MENTIS.model_copy(
        update={
            "hidden_properties": type(MENTIS.hidden_properties).model_validate({"Repository": ["apiToken"]}),
            "visible_properties": None,
        }
    )
    principals = [parse_principal("ci:repositories=acme/api"), parse_principal("nobody")]
    found = matrix(policy, _fake_graph, principals)
    repo = found.rows["label Repository"]
    assert (repo["ci"].visible, repo["ci"].total, repo["nobody"].visible) == (1, 2, 0)
    # The sandbox's own withholding decides the keys shown: the hidden token is not among them.
    assert repo["ci"].properties == ["slug", "uid"]
    table = render_matrix(found)
    assert "label Repository" in table and "1/2" in table and "0/2" in table
    assert "label Repository, ci: slug, uid" in table
    # The allow-list form: only the listed key, whatever else the elements carry.
    assert MENTIS.visible_properties is not None
    listed = MENTIS.visible_properties.model_copy(update={"nodes": {"Repository": frozenset({"slug"})}})
    allowed = matrix(MENTIS.model_copy(update={"visible_properties": listed}), _fake_graph, principals)
    assert allowed.rows["label Repository"]["ci"].properties == ["slug"]

    page = _Page()
    text = matrix_html(found, "mentis <b>", principals)
    page.feed(text)
    page.close()
    assert "script" not in page.tags and "link" not in page.tags and "style" in page.tags
    assert not [value for name, value in page.attrs if name in ("src", "href")]
    assert "<b>" not in text.split("<title>")[1].split("</title>")[0]  # the policy's name is escaped
    assert page.cells[:3] == ["label / type", "ci", "nobody"]
    assert "1 / 2slug, uid" in page.cells and "0 / 2" in page.cells
    assert ("data-visible", "1") in page.attrs and ("data-total", "2") in page.attrs


def _answers(node: list[Any] | None, relationship: list[Any] | None = None) -> Run:
    """A graph that answers the node query with ``node`` and the relationship query with ``relationship``."""

    def run(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        assert params["__key"] == "uid"
        if cypher.startswith("MATCH (x:"):
            return [node] if node is not None else []
        return [relationship] if relationship is not None else []

    return run


def test_explain_names_untagged_when_the_rule_s_property_is_missing() -> None:
    policy = load_policy(POLICIES_DIR / "mindreader.yaml")
    named = sorted(policy.scope.nodes)
    row = [["Entity"], ["uid", "name"], False, [label != "Entity" for label in named], False]
    found = explain(policy, _answers(row), parse_principal("a:layers=team-a"), ElementRef.parse("Entity:uid=e1"))
    assert not found.visible and found.decided_by == "untagged (it has no 'layers')"
    assert any("Entity (membership): visible when its layers is an empty list" in r for r in found.reasons)


def test_explain_names_bookkeeping_for_a_correction_edge() -> None:
    policy = load_policy(POLICIES_DIR / "mindreader.yaml")
    rel = ["SUPERSEDES", ["uid", "layers"], False, True, True, True]
    found = explain(
        policy, _answers(None, rel), parse_principal("a:layers=team-a"), ElementRef.parse("SUPERSEDES:uid=s")
    )
    assert not found.visible and found.decided_by == "bookkeeping"
    # Mindreader also denies the type outright under analyze: the explanation says so.
    assert "SUPERSEDES is in tools.analyze.denied_relationship_types" in render_explanation(found)


def test_explain_refuses_an_element_that_is_not_there_or_not_one() -> None:
    policy = load_policy(POLICIES_DIR / "mindreader.yaml")
    with pytest.raises(ReviewError, match="no node labelled Entity"):
        explain(policy, _answers(None), parse_principal("a"), ElementRef.parse("Entity:uid=nope"))
    two = _answers([["Entity"], ["uid"], False, [False] * len(policy.scope.nodes), False])

    def twice(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        return two(cypher, params) * 2

    with pytest.raises(ReviewError, match="more than one element"):
        explain(policy, twice, parse_principal("a"), ElementRef.parse("Entity:uid=dup"))


def test_explain_names_one_parent_for_a_derived_label_beside_another_named_label() -> None:
    # Each label's own rule holds (the name is the caller's, the task's repository too): hidden all the same.
    row = [["Repository", "Task"], ["uid", "name"], False, [True, True, True, True], False]
    found = explain(MENTIS, _answers(row), parse_principal("ci:repositories=acme/api"), ElementRef.parse("Task:uid=t"))
    assert not found.visible
    assert found.decided_by == "one parent: a derived label beside another named label"
    assert (
        "it carries Repository, Task: Task is visible only through its one parent, so a node that also carries "
        "another named label is hidden whatever each rule says"
    ) in found.reasons
