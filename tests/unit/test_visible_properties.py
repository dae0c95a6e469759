"""The allow-list (``visible_properties``): a key nobody listed is never shown, named, nor listed by the schema tool."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway import scope
from gateway.cli.policy import lint_warnings, render_policy
from gateway.cypher import parse
from gateway.domain import Principal
from gateway.errors import QueryRejected
from gateway.guard import check
from gateway.mnr.runner import harness_policy
from gateway.policy import POLICIES_DIR, HiddenProperties, Policy, PolicyError, VisibleProperties, load_policy
from gateway.policy_fit import Shapes, graph_findings
from gateway.runner import job_for
from gateway.service import Gateway
from sandbox.rebuild import ShownNode, ShownRelationship
from sandbox.serialize import encode
from sandbox.tagged import TYPE_KEY
from sandbox.wire import SandboxJob, SandboxResult, VisibleKeys, WireError, decode
from sandbox.wire import to_json as wire_json
from sandbox.withhold import Owners, Withholding, owners_of
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.stub_runner import RunnerStub

MENTIS = load_policy(POLICIES_DIR / "mentis.yaml")
VISIBLE = {
    "nodes": {"Repository": ["name", "slug"], "Task": ["id", "title", "name"]},
    "relationships": {"HAS_TASK": ["since"]},
    "default": ["name"],
}
ALLOW = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
    update={"visible_properties": VisibleProperties.model_validate(VISIBLE)}
)
ALICE = Principal(name="alice", scope=frozenset({"l1"}))


def _rule(query: str, params: dict[str, Any] | None = None, policy: Policy = ALLOW) -> str | None:
    decision = check(query, params or {}, "analyze", policy)
    return None if decision.allowed else decision.rule


def _node(labels: list[str], **props: Any) -> dict[str, Any]:
    return {"$type": "node", "elementId": "n", "labels": labels, "properties": props}


def _rel(rel_type: str, **props: Any) -> dict[str, Any]:
    return {"$type": "relationship", "elementId": "r", "type": rel_type, "startElementId": "a",
            "endElementId": "b", "properties": props}  # fmt: skip


# ---- the policy ---------------------------------------------------------------------------------


def test_a_policy_gives_one_form_or_the_other_never_both(tmp_path: Any) -> None:
    base = ALL_PROPERTIES_POLICY_PATH.read_text(encoding="utf-8")
    both = tmp_path / "both.yaml"
    both.write_text(base + "\nhidden_properties: {Repository: [apiToken]}\nvisible_properties: {default: [name]}\n")
    with pytest.raises(PolicyError, match="cannot both be given"):
        load_policy(both)
    for bad in ("'*'", "'a.b'", "' name'", "'`x`'"):
        with pytest.raises(ValidationError, match="visible_properties entry"):
            VisibleProperties.model_validate({"nodes": {"Repository": [bad.strip("'")]}})


def test_the_shipped_graph_templates_are_allow_lists_without_their_secrets() -> None:
    for name in ("default", "mentis", "mindreader"):
        policy = load_policy(POLICIES_DIR / f"{name}.yaml")
        assert policy.visible_properties is not None and not policy.hidden_properties.names(), name
        assert lint_warnings(policy) == [], name
    assert MENTIS.visible_properties is not None
    assert "embedding" not in MENTIS.visible_properties.names()
    assert MENTIS.key_hidden_everywhere("embedding") and not MENTIS.key_hidden_everywhere("title")


# ---- the guard: a key visible nowhere ----------------------------------------------------------

REFUSED = [
    "MATCH (r:Repository) RETURN r.apiToken",
    "MATCH (r) WHERE r.apiToken STARTS WITH 'a' RETURN count(r)",
    "MATCH (r) RETURN r.name ORDER BY r.apiToken",
    "MATCH (r {apiToken: 'x'}) RETURN count(r)",
    "MATCH (r) RETURN r {.name, .apiToken}",
    "MATCH (r) RETURN r['apiToken']",
    "MATCH (r) RETURN r.NAME",  # exact names: NAME is not name
]


@pytest.mark.parametrize("query", REFUSED)
def test_a_key_no_label_or_type_lists_is_refused_wherever_it_is_named(query: str) -> None:
    assert _rule(query) == "property.not_visible"


def test_the_refusal_names_the_key_and_the_allow_list() -> None:
    decision = check("MATCH (r:Repository) RETURN r.apiToken", {}, "analyze", ALLOW)
    assert decision.reason is not None
    assert "apiToken" in decision.reason and "visible_properties" in decision.reason


@pytest.mark.parametrize(
    "query", ["MATCH (n) RETURN properties(n)", "MATCH (n) RETURN keys(n)", "MATCH (n) RETURN n {.*}",
              "MATCH (n) RETURN n[$k + 'x']"],
)  # fmt: skip
def test_whatever_copies_unnamed_keys_is_refused_under_the_allow_list(query: str) -> None:
    assert _rule(query) == "property.not_visible"


def test_listed_keys_and_whole_elements_pass_the_guard() -> None:
    assert _rule("MATCH (r:Repository) RETURN r, r.name, r.slug") is None
    assert _rule("MATCH ()-[t:HAS_TASK]->() RETURN t.since") is None


# ---- the sandbox: whole elements keep only listed keys -----------------------------------------


def test_whole_elements_keep_only_the_keys_listed_for_them() -> None:
    withholding = Withholding(visible=VisibleKeys(**VISIBLE))  # type: ignore[arg-type]
    rows: list[list[Any]] = [[
        _node(["Repository"], name="acme", slug="acme", apiToken="s3cr3t"),
        _node(["Repository", "Task"], name="both", slug="s", title="t"),  # the intersection: name only
        _node(["Repository", "MarkerLabel"], name="m", slug="m", apiToken="s3cr3t"),  # an unlisted label adds nothing
        _node(["Other"], name="o", apiToken="s3cr3t"),  # no listed label: default
        _node([], name="bare", apiToken="s3cr3t"),
        _rel("HAS_TASK", since=2020, apiToken="s3cr3t"),
        _rel("OTHER", since=2020, name="x"),
        {"$type": "path", "nodes": [_node(["Task"], id="T-1", apitoken="s3cr3t")], "relationships": []},
    ]]  # fmt: skip
    elements, removed = withholding.apply(rows)
    shown = [cell["properties"] for cell in rows[0][:7]]
    assert shown == [
        {"name": "acme", "slug": "acme"}, {"name": "both"}, {"name": "m", "slug": "m"}, {"name": "o"},
        {"name": "bare"}, {"since": 2020}, {"name": "x"},
    ]  # fmt: skip
    assert "s3cr3t" not in encode(rows)
    # Every element counts, so the count never says whether one held an unlisted key.
    assert elements == 8 and removed == 9


def test_the_owners_of_an_element_are_read_in_one_place() -> None:
    typed = {"$type": "Node", "_value": {"_labels": ["A", "B"], "_properties": {}}}
    typed_rel = {"$type": "Relationship", "_value": {"_type": "T", "_properties": {}}}
    assert owners_of(typed) == Owners("node", frozenset({"A", "B"}))
    assert owners_of(typed_rel) == Owners("relationship", frozenset({"T"}))
    assert owners_of(_node(["A"])) == Owners("node", frozenset({"A"}))
    assert owners_of(_rel("T")) == Owners("relationship", frozenset({"T"}))


def test_the_job_carries_the_allow_list_and_the_wire_reads_it_strictly() -> None:
    job = job_for(ALLOW.tool("analyze"), query_id="q", cypher="RETURN 1", params={}, result_check=None,
                  visible_properties=ALLOW.visible_keys())  # fmt: skip
    assert job.visible_properties is not None and job.visible_properties.default == ["name"]
    assert decode(SandboxJob, wire_json(job)).visible_properties == job.visible_properties
    with pytest.raises(WireError, match="visible_properties"):
        decode(SandboxJob, wire_json(job).replace('"default":["name"]', '"default":[7]'))


def test_the_sandbox_answer_under_the_allow_list_drops_unlisted_keys_after_the_check() -> None:
    from sandbox.main import handle

    class Backend:
        warm_error = None
        derived_visible: frozenset[str] = frozenset()

        def run(self, job: SandboxJob) -> SandboxResult:
            rows = [[_node(["Repository"], name="acme", apiToken="s3cr3t")]]
            return SandboxResult(query_id=job.query_id, ok=True, columns=["r"], rows=rows, row_count=1, bytes=10)

    job = SandboxJob(query_id="q", cypher="MATCH (r) RETURN r", timeout_seconds=1, max_rows=10, max_bytes=2_000,
                     visible_properties=ALLOW.visible_keys())  # fmt: skip
    result = handle(wire_json(job).encode(), Backend())  # type: ignore[arg-type]
    assert result.rows[0][0]["properties"] == {"name": "acme"} and result.withheld == 1
    assert result.bytes == len(encode(result.rows).encode())


class _Schema(RunnerStub):
    def answer(self, job: SandboxJob) -> SandboxResult:
        rows: list[list[Any]] = [["apiToken"], ["name"], ["Name"], ["since"], ["embedding"]]
        if "labels(n)" in job.cypher:
            rows = [["Repository"]]
        return SandboxResult(query_id=job.query_id, ok=True, columns=["value"], rows=rows, row_count=len(rows))


def test_the_schema_tool_lists_only_keys_some_element_shows() -> None:
    runner = _Schema()
    result = Gateway(ALLOW, runner).schema(ALICE)
    assert result.propertyKeys == ["name", "since"]
    assert all(job.visible_properties == ALLOW.visible_keys() for job in runner.jobs)


# ---- the scope rewrite: a key some elements do not show reads as null there ---------------------


def _rewritten(query: str, policy: Policy = MENTIS) -> str:
    principal = Principal(name="a", attributes={"repositories": frozenset({"acme/payments"})})
    return scope.plan(parse(query, max_chars=10_000, max_depth=32), policy, "analyze", principal).cypher


def test_a_key_listed_for_some_labels_only_is_read_behind_the_labels_that_show_it() -> None:
    text = _rewritten("MATCH (t:Task) RETURN t.title, t.id ORDER BY t.title")
    shows_title = "any(__gw_label IN labels(t) WHERE __gw_label IN ['Task'])"
    assert f"CASE WHEN {shows_title}" in text
    assert "THEN t.title END AS `t.title`" in text  # the agent's column name is kept
    assert text.count("THEN t.title END") == 2  # the ORDER BY reads the same text
    # id is listed for Task, Attempt and Conclusion only
    assert "none(__gw_label IN labels(t) WHERE __gw_label IN ['Repository'])" in text


def test_a_pattern_map_and_a_map_projection_get_the_same_condition() -> None:
    text = _rewritten("MATCH (t:Task {title: 'x'}) RETURN t {.title}")
    assert "{title: CASE WHEN any(__gw_label IN labels(t) WHERE __gw_label IN ['Task'])" in text
    assert "THEN ('x') END}" in text
    assert "t {title: CASE WHEN" in text and "THEN t.title END}" in text


def test_no_case_where_every_element_shows_the_key() -> None:
    policy = MENTIS.model_copy(
        update={"visible_properties": VisibleProperties.model_validate({"default": ["name"], "nodes": {}})}
    )
    assert "CASE WHEN" not in _rewritten("MATCH (r:Repository) RETURN r.name", policy).split("RETURN")[-1]
    rel = VisibleProperties.model_validate({"relationships": {"HAS_TASK": ["since"], "OTHER": []}})
    rel_policy = MENTIS.model_copy(update={"visible_properties": rel})
    # A pattern map applies to its own element, whose type the pattern fixes.
    assert "[type(h)]" not in _rewritten("MATCH ()-[h:HAS_TASK {since: 1}]->() RETURN 1 AS x", rel_policy)
    # A variable may be another relationship elsewhere in the query (a UNION branch, WITH x AS h).
    assert "CASE WHEN 'since' IN coalesce($__gw_show_rels[type(h)], $__gw_show_default) THEN h.since END" in (
        _rewritten("MATCH ()-[h:HAS_TASK]->() RETURN h.since", rel_policy)
    )


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (t:Task) WITH t.title AS u RETURN u.title",  # u is a value
        "MATCH (t:Task) RETURN t.title AS x UNION MATCH ()-[t]->() RETURN t.title AS x",  # t: node and relationship
        "MATCH (t:Task) RETURN t.title AS x UNION MATCH ()-[r]->() WITH r AS t RETURN t.title AS x",
        "MATCH p = (t:Task)-->() WITH p AS t RETURN t.title",
        "MATCH (t:Task) RETURN t['title']",
        "MATCH (t:Task) RETURN t[$key]",
    ],
)
def test_a_partly_visible_key_read_where_the_kind_is_unknown_is_refused(query: str) -> None:
    with pytest.raises(QueryRejected) as refused:
        _rewritten(query)
    assert refused.value.rule == "scope.unsupported"


def test_a_copy_of_a_node_is_a_node() -> None:
    text = _rewritten("CYPHER 25 MATCH (t:Task) WITH t AS u LET v = u RETURN v.title")
    assert "CASE WHEN any(__gw_label IN labels(v) WHERE __gw_label IN ['Task'])" in text


def test_nodes_of_a_path_are_nodes() -> None:
    text = _rewritten("MATCH p = (t:Task)-[:HAS_ATTEMPT]->(a) RETURN [n IN nodes(p) | n.title] AS titles")
    assert "CASE WHEN any(__gw_label IN labels(n) WHERE __gw_label IN ['Task'])" in text


# ---- policy show, lint, the graph fit, the MNR harness ------------------------------------------


def test_policy_show_states_the_form_and_the_case_rule() -> None:
    shown = render_policy(MENTIS)
    assert "an allow-list (visible_properties), which fails closed" in shown and "names are exact" in shown
    assert "visible properties of :Task: id, title" in shown
    deny = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
        update={"hidden_properties": HiddenProperties.model_validate({"Repository": ["apiToken"]})}
    )
    assert "a deny-list (hidden_properties), which fails open" in render_policy(deny)
    assert "case-insensitively" in render_policy(deny)


def test_lint_warns_that_a_deny_list_fails_open() -> None:
    deny = load_policy(ALL_PROPERTIES_POLICY_PATH).model_copy(
        update={"hidden_properties": HiddenProperties.model_validate({"Repository": ["api_token"]})}
    )
    assert any("deny-list and fails open" in warning for warning in lint_warnings(deny))
    assert not any("names no property list" in warning for warning in lint_warnings(deny))
    assert not any("deny-list" in warning for warning in lint_warnings(load_policy(ALL_PROPERTIES_POLICY_PATH)))


def test_a_policy_with_neither_list_is_accepted_and_lint_and_show_say_every_property_is_shown() -> None:
    shows_all = load_policy(ALL_PROPERTIES_POLICY_PATH)
    assert shows_all.visible_properties is None and not shows_all.hidden_properties.names()
    assert not shows_all.hides_properties() and not shows_all.key_hidden_everywhere("apiToken")
    assert any("names no property list, so every property" in warning for warning in lint_warnings(shows_all))
    assert "properties: no list (neither visible_properties nor hidden_properties), which fails open: every " in (
        render_policy(shows_all)
    )


def test_the_shipped_default_policy_is_an_allow_list_showing_nothing_by_default() -> None:
    default = load_policy()
    assert default.visible_properties is not None and default.visible_properties.default == frozenset()
    assert not default.hidden_properties.names()
    assert not any("fails open" in warning or "property list" in warning for warning in lint_warnings(default))
    shown = render_policy(default)
    assert "properties: an allow-list (visible_properties), which fails closed" in shown
    assert "visible properties by default: (none)" in shown
    # A key the demo graph does not carry, or carries under another case, is hidden everywhere.
    assert default.key_hidden_everywhere("apiToken") and default.key_hidden_everywhere("TEXT")
    assert not default.key_hidden_everywhere("text")


def test_a_visible_key_no_element_carries_is_a_finding_with_its_near_miss() -> None:
    policy = MENTIS.model_copy(
        update={"visible_properties": VisibleProperties.model_validate({"nodes": {"Repository": ["Name"]}})}
    )
    shapes = Shapes(labels={"Repository": frozenset({"name", "apiToken"})}, types={})
    problems = [f.problem for f in graph_findings(policy, shapes)]
    assert any("visible_properties.nodes.Repository names 'Name'" in p and "'name'" in p for p in problems)


def test_the_mnr_harness_shows_its_fixture_key_and_nothing_else() -> None:
    widened = harness_policy(MENTIS, "uid")
    assert widened.visible_properties is not None and MENTIS.visible_properties is not None
    assert widened.visible_properties.on_every_node("uid") and widened.visible_properties.on_every_relationship("uid")
    assert widened.visible_properties.names() - MENTIS.visible_properties.names() == {"uid"}
    assert harness_policy(load_policy(ALL_PROPERTIES_POLICY_PATH), "uid") is not None


def test_a_rebuilt_element_is_owned_by_its_labels_or_type_whatever_its_properties() -> None:
    # The projection wrapper's elements are dicts of their properties: a property shaped like a tag
    # must not decide which keys they show.
    node = ShownNode("4:x:1", ["Attempt"], [(TYPE_KEY, "node"), ("labels", ["Fact"])])
    rel = ShownRelationship("5:x:1", "KNOWS", None, None, [(TYPE_KEY, "relationship"), ("type", "OTHER")])
    assert owners_of(node) == Owners("node", frozenset({"Attempt"}))
    assert owners_of(rel) == Owners("relationship", frozenset({"KNOWS"}))


def test_a_null_test_of_a_key_some_elements_do_not_show_is_not_copied_in_front_of_the_guard() -> None:
    # In front of the CASE the agent's text reads the stored value: IS NULL there would drop a node
    # whose title is stored but not shown (the CASE reads it as null), and count stored values.
    text = _rewritten("MATCH (n) WHERE n.title IS NULL AND size(n.id) > 0 RETURN count(*) AS c")
    assert "(n.title IS NULL) AND CASE" not in text and "THEN n.title END IS NULL" in text, text
    # A comparison true on the shown value is true on the stored one: it stays in front for the planner.
    text = _rewritten("MATCH (n) WHERE n.title = 'x' AND n.id IS NOT NULL AND size(n.id) > 0 RETURN count(*) AS c")
    assert "WHERE (n.title = 'x') AND (n.id IS NOT NULL) AND CASE" in text, text
